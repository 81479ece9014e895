//! Optimisers (gradient *ascent* on the log-likelihood), learning-rate schedules and penalties.

use ebm_core::{Error, Result};
use serde::{Deserialize, Serialize};

/// The learning rate \\(\gamma_t\\) as a function of the update number \\(t = 0, 1, \dots\\).
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub enum LearningRate {
    /// \\(\gamma_t = \gamma\\).
    Constant(f64),
    /// Linear decay \\(\gamma_t = \gamma_0 + (\gamma_1 - \gamma_0)\min(t / T, 1)\\).
    Linear {
        /// \\(\gamma_0\\).
        initial: f64,
        /// \\(\gamma_1\\), reached at update \\(T\\) and kept afterwards.
        last: f64,
        /// \\(T\\).
        updates: u64,
    },
    /// Exponential decay \\(\gamma_t = \max(\gamma_0 \rho^{t}, \gamma_{\min})\\).
    Exponential {
        /// \\(\gamma_0\\).
        initial: f64,
        /// \\(\rho \in (0, 1]\\), the factor per update.
        decay: f64,
        /// \\(\gamma_{\min}\\).
        floor: f64,
    },
}

impl LearningRate {
    /// \\(\gamma_t\\) at update `t`.
    pub fn at(&self, t: u64) -> f64 {
        match *self {
            LearningRate::Constant(g) => g,
            LearningRate::Linear {
                initial,
                last,
                updates,
            } => {
                let f = if updates == 0 {
                    1.0
                } else {
                    (t as f64 / updates as f64).min(1.0)
                };
                initial + (last - initial) * f
            }
            LearningRate::Exponential {
                initial,
                decay,
                floor,
            } => (initial * decay.powf(t as f64)).max(floor),
        }
    }

    pub(crate) fn validate(&self) -> Result<()> {
        let bad = |reason: String| {
            Err(Error::InvalidParameter {
                name: "learning_rate".into(),
                reason,
            })
        };
        let positive = |x: f64| x.is_finite() && x > 0.0;
        match *self {
            LearningRate::Constant(g) if !positive(g) => {
                bad(format!("must be finite and > 0, got {g}"))
            }
            LearningRate::Linear { initial, last, .. } if !positive(initial) || !positive(last) => {
                bad(format!(
                    "rates must be finite and > 0, got {initial} -> {last}"
                ))
            }
            LearningRate::Exponential {
                initial,
                decay,
                floor,
            } if !(positive(initial) && decay > 0.0 && decay <= 1.0 && floor >= 0.0) => {
                bad(format!(
                    "need initial > 0, decay in (0, 1], floor >= 0; got {initial}, {decay}, {floor}"
                ))
            }
            _ => Ok(()),
        }
    }
}

/// The update rule applied to the gradient \\(g_t\\) (ascent direction) of every parameter.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub enum Optimizer {
    /// Stochastic gradient ascent with (heavy-ball) momentum \\(\mu \in [0, 1)\\):
    /// \\(m_t = \mu m_{t-1} + g_t\\), \\(\Delta\theta = \gamma_t m_t\\) (\\(\mu = 0\\): plain SGD,
    /// the reference code's optimiser).
    Sgd {
        /// \\(\mu\\).
        momentum: f64,
    },
    /// Adam (Kingma & Ba): \\(m_t = \beta_1 m_{t-1} + (1 - \beta_1) g_t\\),
    /// \\(v_t = \beta_2 v_{t-1} + (1 - \beta_2) g_t^2\\),
    /// \\(\Delta\theta = \gamma_t\, \hat m_t / (\sqrt{\hat v_t} + \epsilon)\\) with the bias
    /// corrections \\(\hat m_t = m_t / (1 - \beta_1^t)\\), \\(\hat v_t = v_t / (1 - \beta_2^t)\\).
    Adam {
        /// \\(\beta_1\\) (0.9 usually).
        beta1: f64,
        /// \\(\beta_2\\) (0.999 usually).
        beta2: f64,
        /// \\(\epsilon\\) (1e-8 usually).
        epsilon: f64,
    },
}

impl Optimizer {
    /// Plain SGD (no momentum).
    pub const SGD: Optimizer = Optimizer::Sgd { momentum: 0.0 };
    /// Adam with its usual constants \\((0.9, 0.999, 10^{-8})\\).
    pub const ADAM: Optimizer = Optimizer::Adam {
        beta1: 0.9,
        beta2: 0.999,
        epsilon: 1e-8,
    };

    pub(crate) fn validate(&self) -> Result<()> {
        let ok = match *self {
            Optimizer::Sgd { momentum } => (0.0..1.0).contains(&momentum),
            Optimizer::Adam {
                beta1,
                beta2,
                epsilon,
            } => (0.0..1.0).contains(&beta1) && (0.0..1.0).contains(&beta2) && epsilon > 0.0,
        };
        if ok {
            Ok(())
        } else {
            Err(Error::InvalidParameter {
                name: "optimizer".into(),
                reason: format!("{self:?}: need momentum, beta1, beta2 in [0, 1) and epsilon > 0"),
            })
        }
    }
}

/// The optimiser's moments, one entry per parameter (in the order of
/// [`crate::Gradient::flat`]); part of the training state.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct OptimizerState {
    /// First moments (momentum buffer for SGD).
    pub first: Vec<f64>,
    /// Second moments (Adam only; empty for SGD).
    pub second: Vec<f64>,
    /// Number of steps taken.
    pub steps: u64,
}

impl OptimizerState {
    pub(crate) fn new(optimizer: &Optimizer, n: usize) -> Self {
        Self {
            first: vec![0.0; n],
            second: match optimizer {
                Optimizer::Sgd { .. } => Vec::new(),
                Optimizer::Adam { .. } => vec![0.0; n],
            },
            steps: 0,
        }
    }

    /// Checks a state read from a file against `optimizer` and a model of `n` parameters:
    /// `n` finite first moments, and `n` finite second moments for Adam (none for SGD).
    pub(crate) fn check(&self, optimizer: &Optimizer, n: usize) -> Result<()> {
        Error::check_len("optimizer.first (one per parameter)", n, self.first.len())?;
        let second = match optimizer {
            Optimizer::Sgd { .. } => 0,
            Optimizer::Adam { .. } => n,
        };
        Error::check_len(
            "optimizer.second (one per parameter for Adam, none for SGD)",
            second,
            self.second.len(),
        )?;
        Error::check_finite("optimizer.first", &self.first)?;
        Error::check_finite("optimizer.second", &self.second)
    }

    /// Replaces `g` (the ascent direction) by the parameter step at learning rate `rate`.
    pub(crate) fn step(&mut self, optimizer: &Optimizer, rate: f64, g: &mut [f64]) {
        assert_eq!(
            g.len(),
            self.first.len(),
            "optimizer state does not match the model"
        );
        self.steps += 1;
        match *optimizer {
            Optimizer::Sgd { momentum } => {
                for (m, x) in self.first.iter_mut().zip(g.iter_mut()) {
                    *m = momentum * *m + *x;
                    *x = rate * *m;
                }
            }
            Optimizer::Adam {
                beta1,
                beta2,
                epsilon,
            } => {
                let t = self.steps as i32;
                let (c1, c2) = (1.0 - beta1.powi(t), 1.0 - beta2.powi(t));
                for ((m, v), x) in self
                    .first
                    .iter_mut()
                    .zip(self.second.iter_mut())
                    .zip(g.iter_mut())
                {
                    *m = beta1 * *m + (1.0 - beta1) * *x;
                    *v = beta2 * *v + (1.0 - beta2) * *x * *x;
                    *x = rate * (*m / c1) / ((*v / c2).sqrt() + epsilon);
                }
            }
        }
    }
}

/// Penalties on the **weights** added to the log-likelihood:
/// \\(-\lambda_1 \sum |W_{ij}| - \frac{\lambda_2}{2}\sum W_{ij}^2\\), i.e. the gradient gets
/// \\(-\lambda_1 \operatorname{sign}(W) - \lambda_2 W\\). Fields and precisions are not penalised.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Penalty {
    /// \\(\lambda_1 \ge 0\\).
    pub l1: f64,
    /// \\(\lambda_2 \ge 0\\).
    pub l2: f64,
}

impl Penalty {
    pub(crate) fn validate(&self) -> Result<()> {
        if self.l1 >= 0.0 && self.l2 >= 0.0 && self.l1.is_finite() && self.l2.is_finite() {
            Ok(())
        } else {
            Err(Error::InvalidParameter {
                name: "penalty".into(),
                reason: format!("l1 and l2 must be finite and >= 0, got {self:?}"),
            })
        }
    }

    /// Adds the penalty's gradient at weights `w` to `g`.
    pub(crate) fn apply(&self, w: impl Iterator<Item = f64>, g: &mut [f64]) {
        if self.l1 == 0.0 && self.l2 == 0.0 {
            return;
        }
        for (gi, wi) in g.iter_mut().zip(w) {
            let sign = if wi > 0.0 {
                1.0
            } else if wi < 0.0 {
                -1.0
            } else {
                0.0
            };
            *gi -= self.l1 * sign + self.l2 * wi;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn schedules_follow_their_formulas() {
        assert_eq!(LearningRate::Constant(0.1).at(7), 0.1);
        let l = LearningRate::Linear {
            initial: 0.1,
            last: 0.01,
            updates: 10,
        };
        assert!((l.at(5) - 0.055).abs() < 1e-15 && (l.at(20) - 0.01).abs() < 1e-15);
        let e = LearningRate::Exponential {
            initial: 1.0,
            decay: 0.5,
            floor: 0.2,
        };
        assert_eq!((e.at(1), e.at(10)), (0.5, 0.2));
        assert!(LearningRate::Constant(-1.0).validate().is_err());
        assert!(Optimizer::Sgd { momentum: 1.0 }.validate().is_err());
        assert!(Penalty { l1: -1.0, l2: 0.0 }.validate().is_err());
    }

    #[test]
    fn adam_first_step_is_the_learning_rate_times_the_sign() {
        let mut s = OptimizerState::new(&Optimizer::ADAM, 3);
        let mut g = vec![2.0, -0.5, 0.0];
        s.step(&Optimizer::ADAM, 0.1, &mut g);
        assert!((g[0] - 0.1).abs() < 1e-7 && (g[1] + 0.1).abs() < 1e-7 && g[2] == 0.0);
        let mut s = OptimizerState::new(&Optimizer::Sgd { momentum: 0.5 }, 1);
        let mut g = vec![1.0];
        s.step(&Optimizer::Sgd { momentum: 0.5 }, 0.1, &mut g);
        let mut g2 = vec![1.0];
        s.step(&Optimizer::Sgd { momentum: 0.5 }, 0.1, &mut g2);
        assert!((g[0] - 0.1).abs() < 1e-15 && (g2[0] - 0.15).abs() < 1e-15);
    }

    #[test]
    fn penalties_pull_weights_to_zero() {
        let mut g = vec![0.0, 0.0, 0.0];
        Penalty { l1: 0.1, l2: 1.0 }.apply([2.0, -1.0, 0.0].into_iter(), &mut g);
        assert_eq!(g, vec![-2.1, 1.1, 0.0]);
    }
}
