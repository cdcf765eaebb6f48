//! The Kubernetes objects of a distributed run, as `k8s-openapi` structs (see the module's
//! documentation in `mod.rs`).

use std::collections::BTreeMap;

use k8s_openapi::ByteString;
use k8s_openapi::api::batch::v1::{Job, JobSpec};
use k8s_openapi::api::core::v1::{
    Affinity, ConfigMap, ConfigMapVolumeSource, Container, ContainerPort, EmptyDirVolumeSource,
    EnvVar, EnvVarSource, KeyToPath, ObjectFieldSelector, PersistentVolumeClaimVolumeSource,
    PodAffinityTerm, PodAntiAffinity, PodSecurityContext, PodSpec, PodTemplateSpec,
    ResourceRequirements, Secret, SecretKeySelector, Service, ServicePort, ServiceSpec, Volume,
    VolumeMount, WeightedPodAffinityTerm,
};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, ObjectMeta};

use super::bundle::Bundle;
use super::error::K8sError;
use super::options::{K8sOptions, PodSecret, RESULTS_DIR, SCENARIO_DIR};

/// The objects of one distributed run.
#[derive(Debug, Clone, PartialEq)]
pub struct Manifests {
    pub config_map: ConfigMap,
    /// The run's secrets ([`PodSecret`]), one key per environment variable.
    pub secret: Secret,
    pub service: Service,
    pub job: Job,
}

fn check_name(name: &str) -> Result<(), K8sError> {
    // The Job's pods are named `<name>-<index>-<suffix>` and must stay within 63 characters.
    const MAX: usize = 40;
    let ok = !name.is_empty()
        && name.len() <= MAX
        && name
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
        && !name.starts_with('-')
        && !name.ends_with('-');
    if ok {
        Ok(())
    } else {
        Err(K8sError::BadName {
            name: name.to_string(),
            max: MAX,
        })
    }
}

/// The manifests of `bundle` run as `opts` says, every pod given `secrets` through the run's
/// Secret.
pub fn manifests(
    opts: &K8sOptions,
    bundle: &Bundle,
    secrets: &[PodSecret],
) -> Result<Manifests, K8sError> {
    check_name(&opts.name)?;
    let labels = BTreeMap::from([
        (
            "app.kubernetes.io/name".to_string(),
            "infermeter".to_string(),
        ),
        ("infermeter.dev/run".to_string(), opts.name.clone()),
    ]);
    let meta = |name: String| ObjectMeta {
        name: Some(name),
        namespace: opts.namespace.clone(),
        labels: Some(labels.clone()),
        ..ObjectMeta::default()
    };
    let config_name = format!("{}-scenario", opts.name);
    let (data, binary_data, items) = bundle.config_map_data();
    let config_map = ConfigMap {
        metadata: meta(config_name.clone()),
        data: (!data.is_empty()).then_some(data),
        binary_data: (!binary_data.is_empty()).then_some(binary_data),
        immutable: Some(true),
    };
    let service = Service {
        metadata: meta(opts.name.clone()),
        spec: Some(ServiceSpec {
            cluster_ip: Some("None".into()),
            selector: Some(BTreeMap::from([(
                "infermeter.dev/run".to_string(),
                opts.name.clone(),
            )])),
            ports: Some(vec![ServicePort {
                name: Some("coordinator".into()),
                port: i32::from(opts.port),
                ..ServicePort::default()
            }]),
            // The shards look shard 0 up before any pod is ready.
            publish_not_ready_addresses: Some(true),
            ..ServiceSpec::default()
        }),
        status: None,
    };
    let secret_name = format!("{}-secrets", opts.name);
    let secret = run_secret(meta(secret_name.clone()), secrets);
    let mut spec = job_spec(opts, bundle, &labels, config_name, items);
    if let Some(pod) = spec.template.spec.as_mut() {
        let mut env = secret_env(&secret_name, secrets);
        env.push(node_env());
        pod.containers[0].env = Some(env);
    }
    let job = Job {
        metadata: meta(opts.name.clone()),
        spec: Some(spec),
        status: None,
    };
    Ok(Manifests {
        config_map,
        secret,
        service,
        job,
    })
}

/// The run's Secret: each [`PodSecret`] under its environment variable's name as the key.
/// The one place a pod's secrets are written; [`secret_env`] is how pods read them.
fn run_secret(metadata: ObjectMeta, secrets: &[PodSecret]) -> Secret {
    Secret {
        metadata,
        data: Some(
            secrets
                .iter()
                .map(|s| (s.env.clone(), ByteString(s.value.clone().into_bytes())))
                .collect(),
        ),
        immutable: Some(true),
        type_: Some("Opaque".into()),
        ..Secret::default()
    }
}

/// The container's environment: every secret, by reference to the run's Secret.
fn secret_env(secret_name: &str, secrets: &[PodSecret]) -> Vec<EnvVar> {
    secrets
        .iter()
        .map(|s| EnvVar {
            name: s.env.clone(),
            value_from: Some(EnvVarSource {
                secret_key_ref: Some(SecretKeySelector {
                    name: secret_name.to_string(),
                    key: s.env.clone(),
                    optional: Some(false),
                }),
                ..EnvVarSource::default()
            }),
            ..EnvVar::default()
        })
        .collect()
}

/// The node a pod runs on, from the downward API: each shard's results name it
/// (`provenance.infra.client_node`), so shards on different nodes can be told apart.
fn node_env() -> EnvVar {
    EnvVar {
        name: crate::results::K8S_NODE_ENV.into(),
        value_from: Some(EnvVarSource {
            field_ref: Some(ObjectFieldSelector {
                field_path: "spec.nodeName".into(),
                api_version: None,
            }),
            ..EnvVarSource::default()
        }),
        ..EnvVar::default()
    }
}

fn job_spec(
    opts: &K8sOptions,
    bundle: &Bundle,
    labels: &BTreeMap<String, String>,
    config_name: String,
    items: Vec<KeyToPath>,
) -> JobSpec {
    let n = opts.shards;
    let container = shard_container(opts, shard_args(opts, bundle));
    let anti = spread_shards(opts);
    let results = results_volume(opts);
    let pod = PodSpec {
        containers: vec![container],
        // A shard that failed must not run again: its load would be sent twice.
        restart_policy: Some("Never".into()),
        subdomain: Some(opts.name.clone()),
        // The image runs as uid 10001; a results volume must be writable by it.
        security_context: Some(PodSecurityContext {
            run_as_non_root: Some(true),
            fs_group: Some(10001),
            ..PodSecurityContext::default()
        }),
        affinity: Some(Affinity {
            pod_anti_affinity: Some(anti),
            ..Affinity::default()
        }),
        volumes: Some(vec![
            Volume {
                name: "scenario".into(),
                config_map: Some(ConfigMapVolumeSource {
                    name: config_name,
                    items: Some(items),
                    ..ConfigMapVolumeSource::default()
                }),
                ..Volume::default()
            },
            results,
        ]),
        ..PodSpec::default()
    };
    JobSpec {
        completion_mode: Some("Indexed".into()),
        completions: Some(n as i32),
        parallelism: Some(n as i32),
        backoff_limit: Some(0),
        template: PodTemplateSpec {
            metadata: Some(ObjectMeta {
                labels: Some(labels.clone()),
                ..ObjectMeta::default()
            }),
            spec: Some(pod),
        },
        ..JobSpec::default()
    }
}

/// The arguments of every shard's `infermeter run`; the pod's index picks its shard.
fn shard_args(opts: &K8sOptions, bundle: &Bundle) -> Vec<String> {
    let n = opts.shards;
    // The Job controller sets JOB_COMPLETION_INDEX in every pod; `$(…)` expands it.
    let index = "$(JOB_COMPLETION_INDEX)";
    let coordinator = format!("http://{}-0.{}:{}", opts.name, opts.name, opts.port);
    let mut args = vec![
        "run".to_string(),
        format!("{SCENARIO_DIR}/{}", bundle.scenario),
        format!("--shard={index}/{n}"),
        format!("--coordinator={coordinator}"),
        format!("--coordinator-listen=0.0.0.0:{}", opts.port),
        format!("--out={RESULTS_DIR}/shard-{index}"),
        // The shard's directory is the Job's own: a run again under the same name, on the
        // same results claim, replaces the last run's (as its merged result is).
        "--force".to_string(),
        format!("--merged-out={RESULTS_DIR}/merged"),
        "--progress-lines".to_string(),
    ];
    // The pod's cores, used: a dispatcher and a runtime worker on each (unless the user's own
    // run arguments say otherwise).
    if !opts.run_args.iter().any(|a| a.starts_with("--cpus")) {
        args.push(format!("--cpus={}", opts.cpus));
    }
    args.extend(opts.params.iter().map(|(k, v)| format!("--param={k}={v}")));
    args.extend(opts.run_args.iter().cloned());
    args
}

/// The one container of a shard's pod: the image, its arguments, its resources and mounts.
fn shard_container(opts: &K8sOptions, args: Vec<String>) -> Container {
    let amount = BTreeMap::from([
        ("cpu".to_string(), Quantity(opts.cpus.to_string())),
        ("memory".to_string(), Quantity(opts.memory.clone())),
    ]);
    Container {
        name: "shard".into(),
        image: Some(opts.image.clone()),
        command: Some(vec!["infermeter".into()]),
        args: Some(args),
        ports: Some(vec![ContainerPort {
            name: Some("coordinator".into()),
            container_port: i32::from(opts.port),
            ..ContainerPort::default()
        }]),
        resources: Some(ResourceRequirements {
            requests: Some(amount.clone()),
            limits: Some(amount),
            ..ResourceRequirements::default()
        }),
        volume_mounts: Some(vec![
            VolumeMount {
                name: "scenario".into(),
                mount_path: SCENARIO_DIR.into(),
                read_only: Some(true),
                ..VolumeMount::default()
            },
            VolumeMount {
                name: "results".into(),
                mount_path: RESULTS_DIR.into(),
                ..VolumeMount::default()
            },
        ]),
        ..Container::default()
    }
}

/// Keeps the shards off each other's nodes, so that they do not share (and skew) a machine's
/// CPUs; required or only preferred, as the user chose.
fn spread_shards(opts: &K8sOptions) -> PodAntiAffinity {
    let term = PodAffinityTerm {
        label_selector: Some(LabelSelector {
            match_labels: Some(BTreeMap::from([(
                "infermeter.dev/run".to_string(),
                opts.name.clone(),
            )])),
            ..LabelSelector::default()
        }),
        topology_key: "kubernetes.io/hostname".into(),
        ..PodAffinityTerm::default()
    };
    if opts.spread_required {
        PodAntiAffinity {
            required_during_scheduling_ignored_during_execution: Some(vec![term]),
            ..PodAntiAffinity::default()
        }
    } else {
        PodAntiAffinity {
            preferred_during_scheduling_ignored_during_execution: Some(vec![
                WeightedPodAffinityTerm {
                    weight: 100,
                    pod_affinity_term: term,
                },
            ]),
            ..PodAntiAffinity::default()
        }
    }
}

/// Where shards write their results: the user's claim, else a scratch directory.
fn results_volume(opts: &K8sOptions) -> Volume {
    match &opts.results_claim {
        Some(claim) => Volume {
            name: "results".into(),
            persistent_volume_claim: Some(PersistentVolumeClaimVolumeSource {
                claim_name: claim.clone(),
                read_only: None,
            }),
            ..Volume::default()
        },
        None => Volume {
            name: "results".into(),
            empty_dir: Some(EmptyDirVolumeSource::default()),
            ..Volume::default()
        },
    }
}

impl Manifests {
    /// Each object as pretty JSON (which `kubectl apply -f` reads), with its file name.
    pub fn files(&self, name: &str) -> Vec<(String, String)> {
        let json = |v: serde_json::Result<String>| v.unwrap_or_default() + "\n";
        vec![
            (
                format!("{name}-configmap.json"),
                json(serde_json::to_string_pretty(&self.config_map)),
            ),
            (
                format!("{name}-secret.json"),
                json(serde_json::to_string_pretty(&self.secret)),
            ),
            (
                format!("{name}-service.json"),
                json(serde_json::to_string_pretty(&self.service)),
            ),
            (
                format!("{name}-job.json"),
                json(serde_json::to_string_pretty(&self.job)),
            ),
        ]
    }

    /// Writes [`Manifests::files`] into `dir`, each readable by its owner only (one holds the
    /// run's secrets); returns the paths.
    pub fn write(
        &self,
        name: &str,
        dir: &std::path::Path,
    ) -> Result<Vec<std::path::PathBuf>, K8sError> {
        std::fs::create_dir_all(dir).map_err(|source| K8sError::Write {
            path: dir.to_path_buf(),
            source,
        })?;
        self.files(name)
            .into_iter()
            .map(|(file, text)| {
                let path = dir.join(file);
                write_private(&path, &text).map_err(|source| K8sError::Write {
                    path: path.clone(),
                    source,
                })?;
                Ok(path)
            })
            .collect()
    }
}

/// Writes `text` to `path` with mode 0600 (a manifest from an earlier run is replaced, and
/// made private too).
fn write_private(path: &std::path::Path, text: &str) -> std::io::Result<()> {
    use std::io::Write as _;
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create(true).truncate(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
        options.mode(0o600);
        let mut f = options.open(path)?;
        f.set_permissions(std::fs::Permissions::from_mode(0o600))?;
        f.write_all(text.as_bytes())
    }
    #[cfg(not(unix))]
    {
        options.open(path)?.write_all(text.as_bytes())
    }
}
