//! The files a shard needs beside the scenario — its data sets, tokenizer, hooks, report
//! template and baseline — read from the scenario's directory into a ConfigMap (whose keys
//! cannot hold `/`, so each file gets a flat key and an item that mounts it at its path).

use std::collections::BTreeMap;
use std::path::{Component, Path, PathBuf};

use k8s_openapi::ByteString;
use k8s_openapi::api::core::v1::KeyToPath;

use super::error::K8sError;
use crate::dataset::TokenizerSpec;
use crate::scenario::{DatasetKind, Scenario};

/// A ConfigMap holds at most 1 MiB; leave room for the object around the data.
const MAX_BYTES: usize = 1_000_000;

/// The scenario file and every file it names, by path relative to its directory.
#[derive(Debug, Clone, PartialEq)]
pub struct Bundle {
    /// The scenario's file name.
    pub scenario: String,
    pub files: BTreeMap<String, Vec<u8>>,
}

/// Reads the scenario at `path` (loaded as `scenario`) and the files it names.
pub fn bundle(path: &Path, scenario: &Scenario) -> Result<Bundle, K8sError> {
    let dir = scenario.source.base_dir();
    let mut named: Vec<PathBuf> = Vec::new();
    for d in &scenario.datasets {
        match &d.kind {
            DatasetKind::Synthetic(_) | DatasetKind::AgenticSynthetic(_) => {}
            DatasetKind::ShareGpt(s) => named.push(s.path.value.clone()),
            DatasetKind::Jsonl(s) => named.push(s.path.value.clone()),
            DatasetKind::Agentic(s) => named.push(s.path.value.clone()),
            DatasetKind::Trace(s) => named.push(s.path.value.clone()),
        }
        named.extend(d.hooks.as_ref().map(|h| h.value.clone()));
    }
    if let TokenizerSpec::File(p) = &scenario.tokenizer {
        named.push(p.clone());
    }
    named.extend(scenario.report.template.clone());
    named.extend(scenario.report.baseline.clone());
    let read = |p: &Path| {
        std::fs::read(p).map_err(|source| K8sError::Read {
            path: p.to_path_buf(),
            source,
        })
    };
    let file_name = path
        .file_name()
        .map(|f| f.to_string_lossy().into_owned())
        .unwrap_or_else(|| "scenario.kdl".into());
    let mut files = BTreeMap::from([(file_name.clone(), read(path)?)]);
    for rel in named {
        let text = rel.to_string_lossy();
        if crate::hub::HfFile::parse(&text).is_ok() {
            return Err(K8sError::HubFile {
                uri: text.into_owned(),
            });
        }
        let inside = rel.is_relative()
            && rel
                .components()
                .all(|c| matches!(c, Component::Normal(_) | Component::CurDir));
        if !inside {
            return Err(K8sError::Outside {
                path: rel,
                dir: dir.clone(),
            });
        }
        let key = rel
            .components()
            .filter_map(|c| match c {
                Component::Normal(s) => Some(s.to_string_lossy().into_owned()),
                _ => None,
            })
            .collect::<Vec<_>>()
            .join("/");
        files.insert(key, read_named(&dir.join(&rel))?);
    }
    let bytes: usize = files.values().map(Vec::len).sum();
    if bytes > MAX_BYTES {
        return Err(K8sError::TooLarge {
            bytes,
            max: MAX_BYTES,
        });
    }
    Ok(Bundle {
        scenario: file_name,
        files,
    })
}

/// A file the scenario names: a regular file only (a FIFO would hang), and read no further
/// than a ConfigMap could hold (the sum is refused by [`bundle`]).
fn read_named(p: &Path) -> Result<Vec<u8>, K8sError> {
    use std::io::Read;
    let mut bytes = Vec::new();
    crate::files::open_regular(p)
        .and_then(|f| f.take(MAX_BYTES as u64 + 1).read_to_end(&mut bytes))
        .map(|_| bytes)
        .map_err(|source| K8sError::Read {
            path: p.to_path_buf(),
            source,
        })
}

/// A ConfigMap key for a relative path: `[-._a-zA-Z0-9]`, unique by its position.
fn key(i: usize, path: &str) -> String {
    let flat: String = path
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '-' | '.' | '_') {
                c
            } else {
                '_'
            }
        })
        .collect();
    format!("f{i}-{}", flat.trim_start_matches('.'))
}

impl Bundle {
    /// Text files, binary files, and the items that mount each key at its path.
    pub(super) fn config_map_data(
        &self,
    ) -> (
        BTreeMap<String, String>,
        BTreeMap<String, ByteString>,
        Vec<KeyToPath>,
    ) {
        let (mut data, mut binary, mut items) = (BTreeMap::new(), BTreeMap::new(), Vec::new());
        for (i, (path, bytes)) in self.files.iter().enumerate() {
            let k = key(i, path);
            match std::str::from_utf8(bytes) {
                Ok(text) => {
                    data.insert(k.clone(), text.to_string());
                }
                Err(_) => {
                    binary.insert(k.clone(), ByteString(bytes.clone()));
                }
            }
            items.push(KeyToPath {
                key: k,
                path: path.clone(),
                mode: None,
            });
        }
        (data, binary, items)
    }
}
