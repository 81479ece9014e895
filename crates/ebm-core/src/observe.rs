use crate::Result;

/// Receives a typed info value after each step of an algorithm.
///
/// `()` is the no-op observer (compiles away), a pair `(A, B)` calls both, [`Every`] thins.
/// Progress bars, logs and plots are observers at the edges of the program; samplers never print.
/// Returning an error stops the driving loop, which propagates it.
pub trait Observer<I: ?Sized> {
    /// Called after step number `step` (counting from 1) with that step's info.
    ///
    /// # Errors
    /// Whatever the observer reports; the driver stops and returns it.
    fn observe(&mut self, step: u64, info: &I) -> Result<()>;
}

impl<I: ?Sized> Observer<I> for () {
    #[inline]
    fn observe(&mut self, _step: u64, _info: &I) -> Result<()> {
        Ok(())
    }
}

impl<I: ?Sized, A: Observer<I>, B: Observer<I>> Observer<I> for (A, B) {
    fn observe(&mut self, step: u64, info: &I) -> Result<()> {
        self.0.observe(step, info)?;
        self.1.observe(step, info)
    }
}

impl<I: ?Sized, O: Observer<I> + ?Sized> Observer<I> for &mut O {
    fn observe(&mut self, step: u64, info: &I) -> Result<()> {
        (**self).observe(step, info)
    }
}

impl<I: ?Sized> Observer<I> for Vec<Box<dyn Observer<I>>> {
    fn observe(&mut self, step: u64, info: &I) -> Result<()> {
        self.iter_mut().try_for_each(|o| o.observe(step, info))
    }
}

/// Forwards every `n`-th step (steps `n, 2n, ...`) to the inner observer.
#[derive(Clone, Debug)]
pub struct Every<O>(pub u64, pub O);

impl<I: ?Sized, O: Observer<I>> Observer<I> for Every<O> {
    fn observe(&mut self, step: u64, info: &I) -> Result<()> {
        if self.0 != 0 && step.is_multiple_of(self.0) {
            self.1.observe(step, info)
        } else {
            Ok(())
        }
    }
}

/// An observer made from a closure `FnMut(step, &info) -> Result<()>`.
pub struct FnObserver<F>(pub F);

impl<F> std::fmt::Debug for FnObserver<F> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("FnObserver(..)")
    }
}

impl<I: ?Sized, F: FnMut(u64, &I) -> Result<()>> Observer<I> for FnObserver<F> {
    fn observe(&mut self, step: u64, info: &I) -> Result<()> {
        (self.0)(step, info)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_thins_and_pairs_compose() {
        let mut seen_a = Vec::new();
        let mut seen_b = Vec::new();
        {
            let a = |s: u64, i: &u32| {
                seen_a.push((s, *i));
                Ok(())
            };
            let b = |s: u64, _: &u32| {
                seen_b.push(s);
                Ok(())
            };
            let mut obs = (Every(2, FnObserver(a)), FnObserver(b));
            for s in 1..=5 {
                obs.observe(s, &(s as u32 * 10)).unwrap();
            }
        }
        assert_eq!(seen_a, vec![(2, 20), (4, 40)]);
        assert_eq!(seen_b, vec![1, 2, 3, 4, 5]);
        ().observe(1, &0u8).unwrap();
    }
}
