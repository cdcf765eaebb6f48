//! What goes wrong writing the manifests.

#[derive(Debug, thiserror::Error)]
pub enum K8sError {
    #[error(
        "this build of infermeter has no Kubernetes support (built without the `k8s` feature): \
         install the released binary, or build with `--features k8s`"
    )]
    NotBuilt,
    #[error(
        "`{name}` is not a Kubernetes name: use lowercase letters, digits and `-`, at most {max} characters, starting and ending with a letter or digit"
    )]
    BadName { name: String, max: usize },
    #[error("failed to read {}", path.display())]
    Read {
        path: std::path::PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("{} is outside the scenario's directory, so it cannot be mounted beside it; move it under {}", path.display(), dir.display())]
    Outside {
        path: std::path::PathBuf,
        dir: std::path::PathBuf,
    },
    #[error(
        "the scenario and its files take {bytes} bytes, over a ConfigMap's {max}: put them in an image or a volume and run the Job from there"
    )]
    TooLarge { bytes: usize, max: usize },
    #[error(
        "`{uri}` is a Hub reference, which a run resolves only from its own cache and never \
         downloads: fetch it (`infermeter dataset fetch`), copy the file beside the scenario \
         and name that"
    )]
    HubFile { uri: String },
    #[error("failed to write {}", path.display())]
    Write {
        path: std::path::PathBuf,
        #[source]
        source: std::io::Error,
    },
}
