//! A distributed run as Kubernetes objects: a ConfigMap with the scenario and its files, a
//! Secret with what the pods must know and nobody else (the run's coordinator token, read
//! through an environment reference, never an argument), a headless Service that gives
//! shard 0 (the coordinator) a stable name, and an Indexed Job
//! whose pods are the shards (`JOB_COMPLETION_INDEX`), with Guaranteed-QoS CPU (requests =
//! limits, whole cores) and anti-affinity so no two share a node. Every pod exits with the
//! merged gate's code, so the Job succeeds exactly when the gate passes. Built from the typed
//! structs of `k8s-openapi`, not text templates.
//!
//! Entry point: [`manifests`]. The objects need the `k8s` feature (on by default); without
//! it `infermeter k8s` is refused ([`K8sError::NotBuilt`]).

#[cfg(feature = "k8s")]
mod bundle;
mod error;
#[cfg(feature = "k8s")]
mod objects;
mod options;
#[cfg(all(test, feature = "k8s"))]
mod tests;

#[cfg(feature = "k8s")]
pub use bundle::{Bundle, bundle};
pub use error::K8sError;
#[cfg(feature = "k8s")]
pub use objects::{Manifests, manifests};
pub use options::{K8sOptions, PodSecret, RESULTS_DIR, SCENARIO_DIR};
