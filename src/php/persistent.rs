//! The process's persistent models (`Model::load($path, ['persistent' =>
//! true])`).
//!
//! PHP-FPM, the CLI and `php -S` run one request at a time per process (this
//! extension is built for non-thread-safe PHP), so the table is the thread's
//! own. A worker forked after a model was kept inherits the table: the
//! weights are memory it shares with its parent, and the model's context,
//! whose threads did not survive the fork, is rebuilt on the first call (see
//! `engine::context`).

use std::cell::RefCell;
use std::path::Path;
use std::rc::Rc;

use crate::engine::persistent::{FileId, Key, Listing, Registry};
use crate::engine::{self, LoadError, LoadParams};

thread_local! {
    static MODELS: RefCell<Registry<engine::Model>> = RefCell::new(Registry::default());
}

/// The persistent model for `path` with `params`: the one this process
/// keeps, or a fresh load that it keeps from now on. The flag says whether
/// it was kept already.
pub fn load(path: &Path, params: &LoadParams) -> Result<(Rc<engine::Model>, bool), LoadError> {
    let Ok(file) = FileId::of(path) else {
        // Missing, unreadable...: the plain load says precisely why.
        return engine::Model::load(path, params).map(|m| (Rc::new(m), false));
    };
    let key = Key {
        file,
        params: params.clone(),
    };
    let max = super::settings::max_models();
    MODELS.with_borrow_mut(|models| {
        models.get_or_make(key, path, max, || engine::Model::load(path, params))
    })
}

/// Forget `model` (`close()`): the process no longer keeps it, and its
/// memory goes when the last object of this request using it goes.
pub fn forget(model: &Rc<dyn crate::common::Backend>) {
    MODELS.with_borrow_mut(|models| models.remove_at(Rc::as_ptr(model).cast()));
}

/// Free every persistent model (MSHUTDOWN).
pub fn clear() {
    MODELS.with_borrow_mut(Registry::clear);
}

/// The models kept, most recently used first, and how many loads the process
/// made to fill the table.
pub fn listing() -> (Vec<Listing>, u64) {
    MODELS.with_borrow(|models| (models.listing(), models.misses()))
}
