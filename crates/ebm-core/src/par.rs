use rayon::prelude::*;
use serde::{Deserialize, Serialize};

/// Number of chains processed together by one task. Work over a batch of chains is split into
/// chunks of this many consecutive chains (the last chunk may be shorter); the boundaries depend
/// only on the number of chains, never on the number of threads, which makes every result
/// bit-identical for any [`Par`] and pool size.
pub const CHAIN_CHUNK: usize = 128;

/// How work over chains is executed.
///
/// Both variants produce bit-identical results; `Rayon` runs chunks of [`CHAIN_CHUNK`] chains on
/// the current rayon pool.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub enum Par {
    /// One thread.
    Seq,
    /// Chunks of chains on the rayon thread pool.
    #[default]
    Rayon,
}

impl Par {
    /// Runs `f` on a worker thread of the current rayon pool under [`Par::Rayon`] (directly
    /// when the caller already is one, and always under [`Par::Seq`]), and returns its result.
    ///
    /// For a step made of several parallel loops with serial work between them (a training
    /// update, a PT round): called from outside the pool, every loop would hand its work to
    /// the pool and wake its sleeping workers, and the serial work between the loops would run
    /// on the caller's thread while they fall asleep again. On a worker, the serial work runs
    /// where the pool is, and the other workers, still looking for work between the loops,
    /// take the next loop's chunks at once. Same work, same chunks, so the same results; only
    /// the time between the loops changes (with the PT round's rungs explored at
    /// once, a tempered training update's scaling from one thread to two went from a median
    /// 1.78x to 1.88x; `benches/README.md`).
    pub fn run<R: Send>(self, f: impl FnOnce() -> R + Send) -> R {
        let (mut f, mut out) = (Some(f), None);
        self.run_dyn(&mut || out = Some((f.take().expect("run calls f once"))()));
        out.expect("run calls f")
    }

    /// [`Par::run`] with the work as a trait object: the pool's scope is compiled once, not
    /// once per caller's closure.
    fn run_dyn(self, f: &mut (dyn FnMut() + Send)) {
        match self {
            Par::Rayon if rayon::current_thread_index().is_none() => rayon::scope(|_| f()),
            _ => f(),
        }
    }
}

/// Runs `f(first_chain, out_chunk, rng_chunk)` over consecutive chunks of [`CHAIN_CHUNK`]
/// chains, where `out` holds one column of `rows` values per chain (column-major, chain `i` at
/// `out[i * rows..(i + 1) * rows]`) and `rngs[i]` is chain `i`'s stream.
///
/// # Panics
/// If `out.len() != rows * rngs.len()`.
pub fn for_each_chain_chunk<T, R, G>(par: Par, rows: usize, out: &mut [T], rngs: &mut [R], f: G)
where
    T: Send,
    R: Send,
    G: Fn(usize, &mut [T], &mut [R]) + Sync,
{
    chain_chunks(par, rows, out, rngs, &f);
}

/// The work on one chunk of chains, as [`for_each_chain_chunk`] calls it.
type ChunkWork<'a, T, R> = dyn Fn(usize, &mut [T], &mut [R]) + Sync + 'a;

/// The work on one chunk of chains, as [`for_each_chain_chunk2`] calls it.
type ChunkWork2<'a, T, U, R> = dyn Fn(usize, &mut [T], &mut [U], &mut [R]) + Sync + 'a;

/// The loop of [`for_each_chain_chunk`], with the work as a trait object: the loop (and the
/// rayon machinery under it) is compiled once per buffer and stream type, not once per
/// closure of every model type, which kept a large share of a release build in copies of
/// rayon's job code. The indirect call is one per chunk of [`CHAIN_CHUNK`] chains.
fn chain_chunks<T: Send, R: Send>(
    par: Par,
    rows: usize,
    out: &mut [T],
    rngs: &mut [R],
    f: &ChunkWork<'_, T, R>,
) {
    assert_eq!(
        out.len(),
        rows * rngs.len(),
        "for_each_chain_chunk: buffer of {} values does not hold {} chains of {rows}",
        out.len(),
        rngs.len()
    );
    if rows == 0 {
        // Nothing to write, but chains may still consume randomness: keep chunk semantics.
        rngs.chunks_mut(CHAIN_CHUNK)
            .enumerate()
            .for_each(|(c, r)| f(c * CHAIN_CHUNK, &mut [], r));
        return;
    }
    let step = rows * CHAIN_CHUNK;
    match par {
        Par::Seq => out
            .chunks_mut(step)
            .zip(rngs.chunks_mut(CHAIN_CHUNK))
            .enumerate()
            .for_each(|(c, (o, r))| f(c * CHAIN_CHUNK, o, r)),
        Par::Rayon => out
            .par_chunks_mut(step)
            .zip(rngs.par_chunks_mut(CHAIN_CHUNK))
            .enumerate()
            .for_each(|(c, (o, r))| f(c * CHAIN_CHUNK, o, r)),
    }
}

/// [`for_each_chain_chunk`] over two buffers at once, `out` with `rows` values per chain and
/// `out2` with `rows2`: `f(first_chain, out_chunk, out2_chunk, rng_chunk)` on the same chunks.
///
/// # Panics
/// If `out.len() != rows * rngs.len()`, `out2.len() != rows2 * rngs.len()`, or a row count is
/// zero.
pub fn for_each_chain_chunk2<T, U, R, G>(
    par: Par,
    out: (usize, &mut [T]),
    out2: (usize, &mut [U]),
    rngs: &mut [R],
    f: G,
) where
    T: Send,
    U: Send,
    R: Send,
    G: Fn(usize, &mut [T], &mut [U], &mut [R]) + Sync,
{
    chain_chunks2(par, out, out2, rngs, &f);
}

/// The loop of [`for_each_chain_chunk2`], with the work as a trait object (as
/// [`for_each_chain_chunk`]'s).
fn chain_chunks2<T: Send, U: Send, R: Send>(
    par: Par,
    (rows, out): (usize, &mut [T]),
    (rows2, out2): (usize, &mut [U]),
    rngs: &mut [R],
    f: &ChunkWork2<'_, T, U, R>,
) {
    assert!(rows > 0 && rows2 > 0, "for_each_chain_chunk2: zero rows");
    assert_eq!(
        out.len(),
        rows * rngs.len(),
        "for_each_chain_chunk2: first buffer"
    );
    assert_eq!(
        out2.len(),
        rows2 * rngs.len(),
        "for_each_chain_chunk2: second buffer"
    );
    let (step, step2) = (rows * CHAIN_CHUNK, rows2 * CHAIN_CHUNK);
    match par {
        Par::Seq => out
            .chunks_mut(step)
            .zip(out2.chunks_mut(step2))
            .zip(rngs.chunks_mut(CHAIN_CHUNK))
            .enumerate()
            .for_each(|(c, ((o, o2), r))| f(c * CHAIN_CHUNK, o, o2, r)),
        Par::Rayon => out
            .par_chunks_mut(step)
            .zip(out2.par_chunks_mut(step2))
            .zip(rngs.par_chunks_mut(CHAIN_CHUNK))
            .enumerate()
            .for_each(|(c, ((o, o2), r))| f(c * CHAIN_CHUNK, o, o2, r)),
    }
}

/// Runs `f(i, &mut items[i])` for every item: one task per item on the current rayon pool
/// under [`Par::Rayon`] (the pool balances them, and their own loops), in order under
/// [`Par::Seq`]. For a few independent pieces of work, e.g. the rungs of a PT round. `f` is a
/// trait object, so the loop is compiled once per item type rather than once per closure.
pub fn for_each_item<I: Send>(par: Par, items: &mut [I], f: &(dyn Fn(usize, &mut I) + Sync)) {
    match par {
        Par::Seq => items.iter_mut().enumerate().for_each(|(i, x)| f(i, x)),
        Par::Rayon => items.par_iter_mut().enumerate().for_each(|(i, x)| f(i, x)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chunks_cover_every_chain_once_in_both_modes() {
        for par in [Par::Seq, Par::Rayon] {
            let n = 2 * CHAIN_CHUNK + 5;
            let mut out = vec![0usize; 3 * n];
            let mut ids: Vec<usize> = (0..n).collect();
            for_each_chain_chunk(par, 3, &mut out, &mut ids, |first, o, r| {
                for (k, id) in r.iter().enumerate() {
                    assert_eq!(*id, first + k);
                    o[3 * k..3 * k + 3].fill(*id + 1);
                }
            });
            for i in 0..n {
                assert!(out[3 * i..3 * i + 3].iter().all(|&v| v == i + 1));
            }
        }
    }

    #[test]
    fn run_puts_the_work_on_a_worker_under_rayon_only() {
        assert_eq!(rayon::current_thread_index(), None);
        assert_eq!(Par::Seq.run(rayon::current_thread_index), None);
        assert!(Par::Rayon.run(rayon::current_thread_index).is_some());
        // On a worker already: the same worker, no hand-over.
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(2)
            .build()
            .unwrap();
        pool.install(|| {
            let here = rayon::current_thread_index();
            assert_eq!(Par::Rayon.run(rayon::current_thread_index), here);
        });
    }

    #[test]
    #[should_panic(expected = "does not hold")]
    fn mismatched_buffer_panics_with_message() {
        let mut out = vec![0.0f64; 5];
        let mut r = vec![(); 2];
        for_each_chain_chunk(Par::Seq, 3, &mut out, &mut r, |_, _, _| {});
    }

    /// Every item is visited once with its own index, in order under `Seq`, with the same
    /// result under `Rayon`.
    #[test]
    fn for_each_item_visits_every_item_once() {
        for par in [Par::Seq, Par::Rayon] {
            let mut items: Vec<(usize, u32)> = vec![(usize::MAX, 0); 37];
            for_each_item(par, &mut items, &|i, x| {
                x.0 = i;
                x.1 += 1;
            });
            assert!(
                items
                    .iter()
                    .enumerate()
                    .all(|(i, &(j, n))| i == j && n == 1),
                "{par:?}: {items:?}"
            );
        }
        let order = std::sync::Mutex::new(Vec::new());
        for_each_item(Par::Seq, &mut [(); 5], &|i, _| {
            order.lock().unwrap().push(i)
        });
        assert_eq!(order.into_inner().unwrap(), [0, 1, 2, 3, 4]);
    }
}
