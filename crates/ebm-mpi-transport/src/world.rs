//! [`Mpi`]: the world communicator of a program started by `mpirun`.

use mpi::Count;
use mpi::datatype::PartitionMut;
use mpi::environment::Universe;
use mpi::topology::SimpleCommunicator;
use mpi::traits::{Communicator, CommunicatorCollectives, Destination, Root, Source};

use ebm_mpi::Collective;

/// Largest number of words one rank sends in one MPI call (MPI counts are `i32`); longer
/// messages travel in several calls.
const PIECE: usize = 1 << 28;

/// The processes of the MPI world (`mpirun -n N program`; a program started without `mpirun`
/// is a world of one). Create it once, at the start of `main`; MPI is finalised when it is
/// dropped.
pub struct Mpi {
    world: SimpleCommunicator,
    // Dropped last: finalises MPI.
    _universe: Universe,
}

impl Mpi {
    /// Initialises MPI, or returns `None` if it was already initialised in this process.
    pub fn init() -> Option<Self> {
        let universe = mpi::initialize()?;
        Some(Self {
            world: universe.world(),
            _universe: universe,
        })
    }
}

impl std::fmt::Debug for Mpi {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Mpi")
            .field("rank", &self.rank())
            .field("size", &self.size())
            .finish()
    }
}

impl Collective for Mpi {
    fn rank(&self) -> usize {
        self.world.rank() as usize
    }

    fn size(&self) -> usize {
        self.world.size() as usize
    }

    /// Every rank learns every message's length (an all-gather of one word), then the
    /// messages travel to rank 0 in pieces of at most 2^28 words (one `MPI_Gatherv` each).
    fn gather(&self, local: &[u64]) -> Option<Vec<Vec<u64>>> {
        let size = self.size();
        let mut lengths = vec![0u64; size];
        self.world
            .all_gather_into(&(local.len() as u64), &mut lengths[..]);
        let lengths: Vec<usize> = lengths.iter().map(|&l| l as usize).collect();
        let pieces = lengths.iter().map(|l| l.div_ceil(PIECE)).max().unwrap_or(0);
        let root = self.world.process_at_rank(0);
        let mut all: Vec<Vec<u64>> = lengths.iter().map(|&l| Vec::with_capacity(l)).collect();
        for p in 0..pieces {
            let part = |len: usize| (p * PIECE).min(len)..((p + 1) * PIECE).min(len);
            let mine = &local[part(local.len())];
            if self.is_root() {
                let counts: Vec<Count> = lengths.iter().map(|&l| part(l).len() as Count).collect();
                let displs: Vec<Count> = counts
                    .iter()
                    .scan(0, |at, &c| {
                        let d = *at;
                        *at += c;
                        Some(d)
                    })
                    .collect();
                let mut buf = vec![0u64; counts.iter().map(|&c| c as usize).sum()];
                {
                    let mut partition = PartitionMut::new(&mut buf[..], counts.clone(), displs);
                    root.gather_varcount_into_root(mine, &mut partition);
                }
                let mut at = 0;
                for (message, &c) in all.iter_mut().zip(&counts) {
                    message.extend_from_slice(&buf[at..at + c as usize]);
                    at += c as usize;
                }
            } else {
                root.gather_varcount_into(mine);
            }
        }
        self.is_root().then_some(all)
    }

    /// The length, then the message in pieces of at most 2^28 words (one `MPI_Bcast` each).
    fn broadcast(&self, message: &[u64]) -> Vec<u64> {
        let root = self.world.process_at_rank(0);
        let mut len = message.len() as u64;
        root.broadcast_into(&mut len);
        let mut all = if self.is_root() {
            message.to_vec()
        } else {
            vec![0u64; len as usize]
        };
        for piece in all.chunks_mut(PIECE) {
            root.broadcast_into(piece);
        }
        all
    }

    // --- Point-to-point messages (rung-sharded tempering) ---

    /// The length, then the words in pieces of at most 2^28 (one blocking `MPI_Send` each).
    fn send(&self, to: usize, words: &[u64]) {
        let process = self.world.process_at_rank(to as i32);
        process.send(&(words.len() as u64));
        for piece in words.chunks(PIECE) {
            process.send(piece);
        }
    }

    fn receive(&self, from: usize) -> Vec<u64> {
        let process = self.world.process_at_rank(from as i32);
        let (len, _) = process.receive::<u64>();
        let mut words = Vec::with_capacity(len as usize);
        while words.len() < len as usize {
            let (piece, _) = process.receive_vec::<u64>();
            words.extend(piece);
        }
        words
    }

    // --- End of point-to-point messages ---
}
