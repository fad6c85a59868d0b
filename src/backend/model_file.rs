//! A model's file before llama.cpp reads it: what is certainly not a
//! loadable GGUF is refused with a precise error. Checked by a load in this
//! process and before the shared server is started for a model.

use std::fs::File;
use std::io::Read;
use std::path::Path;

use super::error::LoadError;

/// Every GGUF file starts with these four bytes.
const GGUF_MAGIC: &[u8; 4] = b"GGUF";

/// Reject what is certainly not a loadable GGUF file.
pub fn check_file(path: &Path) -> Result<(), LoadError> {
    let owned = || path.to_path_buf();
    if path.as_os_str().as_encoded_bytes().contains(&0) {
        return Err(LoadError::NulInPath);
    }
    let meta = std::fs::metadata(path).map_err(|e| match e.kind() {
        std::io::ErrorKind::NotFound => LoadError::NotFound { path: owned() },
        _ => LoadError::Unreadable {
            path: owned(),
            reason: e.to_string(),
        },
    })?;
    if meta.is_dir() {
        return Err(LoadError::IsDirectory { path: owned() });
    }
    if !meta.is_file() {
        return Err(LoadError::NotAFile { path: owned() });
    }
    if meta.len() == 0 {
        return Err(LoadError::Empty { path: owned() });
    }
    let mut magic = [0u8; 4];
    let mut file = File::open(path).map_err(|e| LoadError::Unreadable {
        path: owned(),
        reason: e.to_string(),
    })?;
    let read = read_up_to(&mut file, &mut magic).map_err(|e| LoadError::Unreadable {
        path: owned(),
        reason: e.to_string(),
    })?;
    if &magic[..read] != GGUF_MAGIC {
        return Err(LoadError::NotGguf {
            path: owned(),
            found: String::from_utf8_lossy(&magic[..read]).into_owned(),
        });
    }
    Ok(())
}

fn read_up_to(file: &mut File, buf: &mut [u8]) -> std::io::Result<usize> {
    let mut filled = 0;
    while filled < buf.len() {
        match file.read(&mut buf[filled..])? {
            0 => break,
            n => filled += n,
        }
    }
    Ok(filled)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;
    use std::path::PathBuf;

    fn temp_file(name: &str, bytes: &[u8]) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("infer-test-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join(name);
        std::fs::File::create(&path)
            .unwrap()
            .write_all(bytes)
            .unwrap();
        path
    }

    #[test]
    fn missing_file_is_not_found() {
        let err = check_file(Path::new("/nonexistent/model.gguf")).unwrap_err();
        assert!(matches!(err, LoadError::NotFound { .. }), "{err}");
    }

    #[test]
    fn directory_is_rejected() {
        let err = check_file(&std::env::temp_dir()).unwrap_err();
        assert!(matches!(err, LoadError::IsDirectory { .. }), "{err}");
    }

    #[test]
    fn empty_file_is_rejected() {
        let err = check_file(&temp_file("empty.gguf", b"")).unwrap_err();
        assert!(matches!(err, LoadError::Empty { .. }), "{err}");
    }

    #[test]
    fn wrong_magic_is_not_gguf() {
        let err = check_file(&temp_file("text.gguf", b"hello world")).unwrap_err();
        assert_eq!(
            err.to_string().split(':').next().unwrap(),
            "not a GGUF file (the first 4 bytes are \"hell\", expected \"GGUF\")"
        );
    }

    #[test]
    fn device_files_are_not_regular_files() {
        let err = check_file(Path::new("/dev/zero")).unwrap_err();
        assert!(matches!(err, LoadError::NotAFile { .. }), "{err}");
    }

    #[test]
    fn short_file_with_magic_passes_the_precheck() {
        // llama.cpp itself rejects the truncated header; see tests/model_load.rs.
        assert!(check_file(&temp_file("magic.gguf", b"GGUF")).is_ok());
    }
}
