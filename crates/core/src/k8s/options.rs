//! What `infermeter k8s` is asked for: the options of a distributed run's manifests and the
//! secrets its pods read.

/// Where the pods mount the scenario and write results.
pub const SCENARIO_DIR: &str = "/scenario";
pub const RESULTS_DIR: &str = "/results";

/// What the manifests are made of.
#[derive(Debug, Clone)]
pub struct K8sOptions {
    /// Base name of every object (a DNS label: lowercase letters, digits, `-`).
    pub name: String,
    pub namespace: Option<String>,
    pub image: String,
    pub shards: u32,
    /// Whole cores per shard (requests = limits: Guaranteed QoS, pinned by the static CPU
    /// manager where the kubelet runs it).
    pub cpus: u32,
    /// Memory per shard (requests = limits), a Kubernetes quantity (`2Gi`).
    pub memory: String,
    /// The coordinator's port on shard 0.
    pub port: u16,
    /// Scenario params, passed to every shard.
    pub params: Vec<(String, String)>,
    /// A PersistentVolumeClaim for the results (shards' and merged); an `emptyDir` otherwise,
    /// which is gone with the pod (the verdict is still the Job's status and the logs).
    pub results_claim: Option<String>,
    /// Require shards on different nodes (true), or only prefer it.
    pub spread_required: bool,
    /// Extra `infermeter run` arguments for every shard (`--max-send-lag 2ms`, say).
    pub run_args: Vec<String>,
}

/// A value every pod reads from the run's Secret as environment variable `env` (the
/// coordinator token, say): never in the pod's arguments, never shown by `Debug`.
#[derive(Clone, PartialEq, Eq)]
pub struct PodSecret {
    pub env: String,
    pub(super) value: String,
}

impl PodSecret {
    pub fn new(env: impl Into<String>, value: impl Into<String>) -> Self {
        PodSecret {
            env: env.into(),
            value: value.into(),
        }
    }
}

impl std::fmt::Debug for PodSecret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "PodSecret({}=***)", self.env)
    }
}
