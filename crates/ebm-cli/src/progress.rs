//! Progress bars as observers at the edge of the program: the samplers report each step to an
//! [`Observer`], and this one advances an indicatif bar (rate and ETA included).

use ebm_core::Observer;
use indicatif::ProgressBar;

/// Advances a progress bar by one after every observed step, whatever the step's info.
#[derive(Debug)]
pub(crate) struct ProgressObserver(pub ProgressBar);

impl<I: ?Sized> Observer<I> for ProgressObserver {
    fn observe(&mut self, _step: u64, _info: &I) -> ebm_core::Result<()> {
        self.0.inc(1);
        Ok(())
    }
}

impl Drop for ProgressObserver {
    fn drop(&mut self) {
        self.0.finish_and_clear();
    }
}
