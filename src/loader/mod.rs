//! Where `Model::load()` gets its model: loaded for this request, kept by
//! the process for later requests ([`persistent`]), or served by the
//! installation's shared llama-server (`remote::shared`). The binding
//! converts the arguments to a [`LoadRequest`] and calls [`load`]; which
//! source serves, and what each needs of the installation, is decided here.

pub mod persistent;

use std::path::Path;
use std::sync::Arc;

use crate::backend::error::LoadError;
use crate::backend::Backend;
use crate::engine::{self, LoadParams};
use crate::remote::{shared, Remote};

/// Where the model comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Source {
    /// Loaded in this process, freed with the last object that uses it.
    Request,
    /// Loaded in this process and kept for later requests (`persistent`).
    Process,
    /// The installation's shared server (`shared`): the load parameters
    /// are the server's (php.ini `infer.server_*`), not the request's.
    Shared,
}

/// What `Model::load()` was asked for.
#[derive(Debug)]
pub struct LoadRequest {
    pub params: LoadParams,
    pub source: Source,
}

/// What the installation's settings say, asked only when a source needs
/// it.
pub trait Installation {
    /// The shared server's settings; `Ok(None)` when none is configured,
    /// `Err` saying why the settings are refused.
    fn shared_server(&self) -> Result<Option<shared::Settings>, String>;
    /// How many persistent models a process keeps.
    fn max_persistent_models(&self) -> usize;
}

/// A loaded model.
pub struct Loaded {
    pub model: Arc<dyn Backend>,
    /// Kept by the process (`close()` forgets it).
    pub persistent: bool,
}

/// The model `request` asks for, at `path`.
pub fn load(
    path: &Path,
    request: &LoadRequest,
    installation: &dyn Installation,
) -> Result<Loaded, LoadError> {
    let model: Arc<dyn Backend> = match request.source {
        Source::Request => Arc::new(engine::Model::load(path, &request.params)?),
        Source::Process => {
            let max = installation.max_persistent_models();
            persistent::load(path, &request.params, max)?.0
        }
        Source::Shared => {
            let settings = installation
                .shared_server()
                .map_err(|detail| LoadError::Shared { detail })?;
            Remote::connect_shared(&shared_settings_for(path, settings)?)?
        }
    };
    Ok(Loaded {
        model,
        persistent: request.source == Source::Process,
    })
}

/// The shared server's settings, when it serves the model at `path`.
fn shared_settings_for(
    path: &Path,
    settings: Option<shared::Settings>,
) -> Result<shared::Settings, LoadError> {
    let settings = settings.ok_or_else(|| LoadError::Shared {
        detail: "'shared' => true needs the shared server: set php.ini infer.server_model to the GGUF it serves".to_owned(),
    })?;
    if !same_file(path, &settings.model) {
        return Err(LoadError::Shared {
            detail: format!(
                "the shared server serves {} (php.ini infer.server_model), not {}; load this model without 'shared'",
                settings.model.display(),
                path.display()
            ),
        });
    }
    Ok(settings)
}

/// Whether two paths name one file (the same device and inode; the same
/// path when either cannot be looked at, so that the shared server, not this
/// check, says what is wrong).
fn same_file(a: &Path, b: &Path) -> bool {
    use std::os::unix::fs::MetadataExt as _;
    match (std::fs::metadata(a), std::fs::metadata(b)) {
        (Ok(x), Ok(y)) => x.dev() == y.dev() && x.ino() == y.ino(),
        _ => a == b,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::PathBuf;

    struct Settings(Option<PathBuf>, Option<&'static str>);

    impl Installation for Settings {
        fn shared_server(&self) -> Result<Option<shared::Settings>, String> {
            if let Some(refused) = self.1 {
                return Err(refused.to_owned());
            }
            Ok(self.0.clone().map(|model| shared::Settings {
                model,
                mmproj: None,
                lora: Vec::new(),
                slots: 1,
                threads: 1,
                ctx: 512,
                dir: PathBuf::from("/nonexistent"),
                log: None,
                idle: 0,
                start_timeout: std::time::Duration::from_secs(1),
                server_binary: PathBuf::from("/nonexistent/llama-server"),
                supervisor_binary: PathBuf::from("/nonexistent/infer-serve"),
            }))
        }
        fn max_persistent_models(&self) -> usize {
            0
        }
    }

    fn shared_error(path: &Path, installation: &Settings) -> String {
        let request = LoadRequest {
            params: LoadParams::default(),
            source: Source::Shared,
        };
        match load(path, &request, installation) {
            Ok(_) => panic!("loaded"),
            Err(e) => e.to_string(),
        }
    }

    #[test]
    fn a_shared_load_names_what_the_installation_lacks() {
        let here = Path::new(env!("CARGO_MANIFEST_DIR"));
        let model = here.join("Cargo.toml");
        assert!(
            shared_error(&model, &Settings(None, None)).contains(
                "'shared' => true needs the shared server: set php.ini infer.server_model"
            ),
            "{}",
            shared_error(&model, &Settings(None, None))
        );
        assert!(shared_error(
            &model,
            &Settings(None, Some("infer.server_model is refused"))
        )
        .contains("infer.server_model is refused"));
        // The same file by another path is the served model; another file is not.
        let other = shared_error(&model, &Settings(Some(here.join("Cargo.lock")), None));
        assert!(
            other.contains("Cargo.lock (php.ini infer.server_model), not ")
                && other.ends_with("Cargo.toml; load this model without 'shared'"),
            "{other}"
        );
        assert!(same_file(&model, &here.join("src/../Cargo.toml")));
    }
}
