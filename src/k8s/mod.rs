//! placeholder
#[derive(Debug, thiserror::Error)]
#[error("k8s")]
pub struct K8sError;
