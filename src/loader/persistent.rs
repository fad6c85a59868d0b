//! The process's persistent models (`Model::load($path, ['persistent' =>
//! true])`).
//!
//! One table for the whole process, behind a lock: PHP-FPM, the CLI and
//! `php -S` run one request at a time per process, and thread-safe PHP runs
//! its requests as threads that share the table, and so each model (a model
//! may be called from several threads at once). The lock is held while a
//! missing model is loaded, so that two threads asking for the same file
//! load it once. The lock is held only inside a call of this module, so a
//! fork (PHP-FPM's master forks workers between requests, when no call is
//! in progress) never copies it held. A worker forked after a model was
//! kept inherits the table:
//! the weights are memory it shares with its parent, and the model's
//! contexts, whose threads did not survive the fork, are rebuilt on the
//! first call (see `engine::llama::context`).

use std::path::Path;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use crate::engine::cache::persistent::{FileId, Key, Listing, Registry};
use crate::engine::{self, LoadError, LoadParams};

static MODELS: Mutex<Option<Registry<engine::Model>>> = Mutex::new(None);

/// The table, locked. A load that panicked added nothing to it, so a
/// poisoned lock is used as it is.
fn models() -> MutexGuard<'static, Option<Registry<engine::Model>>> {
    MODELS.lock().unwrap_or_else(PoisonError::into_inner)
}

/// The persistent model for `path` with `params`: the one this process
/// keeps, or a fresh load that it keeps from now on. The flag says whether
/// it was kept already.
/// `max` is how many the process keeps (php.ini
/// `infer.max_persistent_models`).
pub fn load(
    path: &Path,
    params: &LoadParams,
    max: usize,
) -> Result<(Arc<engine::Model>, bool), LoadError> {
    let Ok(file) = FileId::of(path) else {
        // Missing, unreadable...: the plain load says precisely why.
        return engine::Model::load(path, params).map(|m| (Arc::new(m), false));
    };
    let key = Key {
        file,
        params: params.clone(),
    };
    models()
        .get_or_insert_with(Registry::default)
        .get_or_make(key, path, max, || engine::Model::load(path, params))
}

/// Forget `model` (`close()`): the process no longer keeps it, and its
/// memory goes when the last object using it goes.
pub fn forget(model: &Arc<dyn crate::backend::Backend>) {
    if let Some(models) = models().as_mut() {
        models.remove_at(Arc::as_ptr(model).cast());
    }
}

/// Free every persistent model (MSHUTDOWN). The models are dropped after
/// the lock is released.
pub fn clear() {
    let taken = models().take();
    drop(taken);
}

/// The models kept, most recently used first, and how many loads the process
/// made to fill the table.
pub fn listing() -> (Vec<Listing>, u64) {
    models()
        .as_ref()
        .map_or((Vec::new(), 0), |m| (m.listing(), m.misses()))
}
