//! The one collective operation sharded runs need, and its in-process transports.

use std::collections::VecDeque;
use std::fmt;
use std::sync::{Arc, Condvar, Mutex, MutexGuard};

/// A group of processes (ranks `0..size`) that can gather messages on rank 0.
///
/// Sharded runs need nothing else: every rank derives its shard from the same inputs (model,
/// seed, sizes), runs it alone, and sends its results to rank 0, which joins them in rank
/// order. Messages are `u64` words (values travel as `f64` bit patterns), so transport is
/// exact.
///
/// Every rank must call [`Collective::gather`] the same number of times, in the same order.
pub trait Collective: fmt::Debug {
    /// This process's rank, in `0..size`.
    fn rank(&self) -> usize;

    /// Number of ranks.
    fn size(&self) -> usize;

    /// Sends `local` to rank 0. Rank 0 receives every rank's message in rank order (its own
    /// first); the other ranks receive `None`. Messages may differ in length.
    fn gather(&self, local: &[u64]) -> Option<Vec<Vec<u64>>>;

    // --- data-parallel training ---
    /// Rank 0's `message`, returned on every rank (the other ranks' `message` is ignored).
    fn broadcast(&self, message: &[u64]) -> Vec<u64>;
    // --- end data-parallel training ---

    /// `true` on rank 0, the rank that receives the gathered results and writes outputs.
    fn is_root(&self) -> bool {
        self.rank() == 0
    }

    // --- Point-to-point messages (rung-sharded tempering) ---

    /// Sends `words` to rank `to` (not this rank). May wait until `to` receives it.
    fn send(&self, to: usize, words: &[u64]);

    /// Receives the next message that rank `from` sent to this rank; messages between two
    /// ranks arrive in the order sent.
    fn receive(&self, from: usize) -> Vec<u64>;

    // --- End of point-to-point messages ---
}

/// The group of one process: the unsharded run.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Solo;

impl Collective for Solo {
    fn rank(&self) -> usize {
        0
    }

    fn size(&self) -> usize {
        1
    }

    fn gather(&self, local: &[u64]) -> Option<Vec<Vec<u64>>> {
        Some(vec![local.to_vec()])
    }

    fn broadcast(&self, message: &[u64]) -> Vec<u64> {
        message.to_vec()
    }

    fn send(&self, to: usize, _: &[u64]) {
        panic!("one process has no rank {to} to send to")
    }

    fn receive(&self, from: usize) -> Vec<u64> {
        panic!("one process has no rank {from} to receive from")
    }
}

/// Ranks as threads of one process, for tests and for checking a sharded computation without
/// MPI: [`Threads::group`] makes the `size` handles, one per thread.
pub struct Threads {
    rank: usize,
    size: usize,
    shared: Arc<Shared>,
}

struct Shared {
    state: Mutex<Round>,
    changed: Condvar,
}

/// The messages of the gather under way and who has arrived at its two meeting points.
struct Round {
    slots: Vec<Option<Vec<u64>>>,
    /// Ranks that arrived at the current meeting point, and how many meeting points passed.
    arrived: usize,
    generation: u64,
    /// A rank panicked: the others would wait for it forever, so they panic too.
    poisoned: bool,
    /// Point-to-point messages under way, `mailboxes[from * size + to]` in the order sent.
    mailboxes: Vec<VecDeque<Vec<u64>>>,
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, Round> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Waits until all `size` ranks have arrived (a barrier that a panicking rank breaks).
    fn meet<'a>(&self, mut round: MutexGuard<'a, Round>, size: usize) -> MutexGuard<'a, Round> {
        let generation = round.generation;
        round.arrived += 1;
        if round.arrived == size {
            round.arrived = 0;
            round.generation += 1;
            self.changed.notify_all();
        }
        while round.generation == generation {
            assert!(!round.poisoned, "another rank of the group panicked");
            round = self.changed.wait(round).unwrap_or_else(|e| e.into_inner());
        }
        round
    }
}

impl Threads {
    /// The handles of a group of `size` ranks, handle `r` for rank `r`. A rank that panics
    /// makes the others panic at their next gather instead of waiting for it forever.
    ///
    /// # Panics
    /// If `size == 0`.
    pub fn group(size: usize) -> Vec<Threads> {
        assert!(size > 0, "a group needs at least one rank");
        let shared = Arc::new(Shared {
            state: Mutex::new(Round {
                slots: vec![None; size],
                arrived: 0,
                generation: 0,
                poisoned: false,
                mailboxes: vec![VecDeque::new(); size * size],
            }),
            changed: Condvar::new(),
        });
        (0..size)
            .map(|rank| Threads {
                rank,
                size,
                shared: Arc::clone(&shared),
            })
            .collect()
    }
}

impl Drop for Threads {
    fn drop(&mut self) {
        if std::thread::panicking() {
            self.shared.lock().poisoned = true;
            self.shared.changed.notify_all();
        }
    }
}

impl fmt::Debug for Threads {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Threads")
            .field("rank", &self.rank)
            .field("size", &self.size)
            .finish()
    }
}

impl Collective for Threads {
    fn rank(&self) -> usize {
        self.rank
    }

    fn size(&self) -> usize {
        self.size
    }

    fn gather(&self, local: &[u64]) -> Option<Vec<Vec<u64>>> {
        let mut round = self.shared.lock();
        round.slots[self.rank] = Some(local.to_vec());
        // Every message is in place before rank 0 reads; rank 0 has emptied the slots before
        // any rank can start the next gather.
        round = self.shared.meet(round, self.size);
        let all = self.is_root().then(|| {
            round
                .slots
                .iter_mut()
                .map(|s| s.take().expect("every rank sent"))
                .collect()
        });
        drop(self.shared.meet(round, self.size));
        all
    }

    fn broadcast(&self, message: &[u64]) -> Vec<u64> {
        let mut round = self.shared.lock();
        if self.is_root() {
            round.slots[0] = Some(message.to_vec());
        }
        // Rank 0's message is in place before any rank reads; every rank has read it before
        // rank 0 empties the slot.
        round = self.shared.meet(round, self.size);
        let all = round.slots[0].clone().expect("rank 0 sent");
        round = self.shared.meet(round, self.size);
        if self.is_root() {
            round.slots[0] = None;
        }
        all
    }

    /// Posts the message and returns: a thread's mailbox never blocks the sender.
    fn send(&self, to: usize, words: &[u64]) {
        assert!(
            to < self.size && to != self.rank,
            "rank {} sends to {to}",
            self.rank
        );
        let mut round = self.shared.lock();
        round.mailboxes[self.rank * self.size + to].push_back(words.to_vec());
        self.shared.changed.notify_all();
    }

    fn receive(&self, from: usize) -> Vec<u64> {
        assert!(
            from < self.size && from != self.rank,
            "rank {} receives from {from}",
            self.rank
        );
        let mut round = self.shared.lock();
        loop {
            if let Some(m) = round.mailboxes[from * self.size + self.rank].pop_front() {
                return m;
            }
            assert!(!round.poisoned, "another rank of the group panicked");
            round = self
                .shared
                .changed
                .wait(round)
                .unwrap_or_else(|e| e.into_inner());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn threads_gather_in_rank_order_on_rank_zero_only() {
        let results: Vec<_> = std::thread::scope(|s| {
            let handles: Vec<_> = Threads::group(3)
                .into_iter()
                .map(|c| {
                    s.spawn(move || {
                        let r = c.rank() as u64;
                        let first = c.gather(&vec![r; c.rank() + 1]);
                        let second = c.gather(&[10 + r]);
                        (first, second)
                    })
                })
                .collect();
            handles.into_iter().map(|h| h.join().unwrap()).collect()
        });
        assert_eq!(results[0].0, Some(vec![vec![0], vec![1, 1], vec![2, 2, 2]]));
        assert_eq!(results[0].1, Some(vec![vec![10], vec![11], vec![12]]));
        assert!(results[1..].iter().all(|r| r.0.is_none() && r.1.is_none()));
        assert_eq!(Solo.gather(&[4, 5]), Some(vec![vec![4, 5]]));
    }

    #[test]
    fn threads_broadcast_rank_zeros_message_to_every_rank() {
        let results: Vec<_> = std::thread::scope(|s| {
            let handles: Vec<_> = Threads::group(3)
                .into_iter()
                .map(|c| {
                    s.spawn(move || {
                        let r = c.rank() as u64;
                        let first = c.broadcast(&[r, 7]);
                        let gathered = c.gather(&[r]);
                        (first, c.broadcast(&vec![r; 3 - c.rank()]), gathered)
                    })
                })
                .collect();
            handles.into_iter().map(|h| h.join().unwrap()).collect()
        });
        for (first, second, _) in &results {
            assert_eq!(first, &[0, 7]);
            assert_eq!(second, &[0, 0, 0]);
        }
        assert_eq!(results[0].2, Some(vec![vec![0], vec![1], vec![2]]));
        assert_eq!(Solo.broadcast(&[4]), [4]);
    }

    #[test]
    fn a_panicking_rank_fails_the_group_instead_of_hanging_it() {
        let outcomes: Vec<bool> = std::thread::scope(|s| {
            let handles: Vec<_> = Threads::group(3)
                .into_iter()
                .map(|c| {
                    s.spawn(move || {
                        assert!(c.rank() != 2, "rank 2 fails before its gather");
                        c.gather(&[1]);
                    })
                })
                .collect();
            handles.into_iter().map(|h| h.join().is_err()).collect()
        });
        assert_eq!(outcomes, [true, true, true]);
    }
}
