//! The summary JSON (`--summary-json`): the [`Summary`] with the keys of docs/outputs.md, which
//! tools rely on, pretty-printed.

use std::fs::File;
use std::io::{self, BufWriter, Write as _};

use crate::summary::Summary;

/// The summary's text: pretty-printed JSON, newline-terminated.
pub fn to_bytes(summary: &Summary) -> io::Result<Vec<u8>> {
    let mut text = serde_json::to_vec_pretty(summary)?;
    text.push(b'\n');
    Ok(text)
}

/// Write the summary into `file` (already created) and sync it.
pub fn write(file: File, summary: &Summary) -> io::Result<()> {
    let mut out = BufWriter::new(file);
    serde_json::to_writer_pretty(&mut out, summary)?;
    out.write_all(b"\n")?;
    out.into_inner().map_err(io::IntoInnerError::into_error)?.sync_all()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::summary::tests::sample;

    #[test]
    fn the_file_is_the_pretty_summary_and_a_newline() {
        let summary = sample();
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("summary.json");
        write(File::create(&path).unwrap(), &summary).unwrap();
        let text = std::fs::read(&path).unwrap();
        assert_eq!(text, to_bytes(&summary).unwrap());
        assert!(text.ends_with(b"}\n") && text.starts_with(b"{\n  \"aborted\": null,\n"));
    }
}
