//! `infermeter k8s SCENARIO --shards N --image IMAGE`: writes the Kubernetes manifests of a
//! distributed run after checking that the scenario can be sharded (see
//! [`crate::app::write_manifests`]).

use std::path::PathBuf;

use clap::Args;

use super::values::parse_param;
use crate::app::{self, K8sOptions};
use crate::error::Error;

#[derive(Debug, Args)]
pub struct K8sArgs {
    /// The scenario file (KDL); it and the files it names go into a ConfigMap.
    pub scenario: PathBuf,
    /// Shards (pods), each on its own node.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..=10_000))]
    pub shards: u32,
    /// The infermeter image the pods run (built from the repository's Dockerfile).
    #[arg(long, value_name = "IMAGE")]
    pub image: String,
    /// Base name of the Job, Service and ConfigMap [default: the scenario's file name].
    #[arg(long, value_name = "NAME")]
    pub name: Option<String>,
    /// Namespace of the objects [default: kubectl's current one].
    #[arg(long, value_name = "NS")]
    pub namespace: Option<String>,
    /// Whole cores per shard (requests = limits, so the pods get Guaranteed QoS).
    #[arg(long, value_name = "N", default_value_t = 2, value_parser = clap::value_parser!(u32).range(1..=1024))]
    pub cpus: u32,
    /// Memory per shard (requests = limits).
    #[arg(long, value_name = "QUANTITY", default_value = "2Gi")]
    pub memory: String,
    /// Port of the coordinator on shard 0.
    #[arg(long, default_value_t = 7777)]
    pub port: u16,
    /// A PersistentVolumeClaim for the results (`shard-I/` and `merged/`) [default: an emptyDir,
    /// gone with the pods].
    #[arg(long, value_name = "CLAIM")]
    pub results_claim: Option<String>,
    /// Only prefer shards on different nodes (the default requires it).
    #[arg(long)]
    pub prefer_spread: bool,
    /// Override a scenario param (repeatable), for every shard.
    #[arg(long = "param", short = 'p', value_name = "NAME=VALUE", value_parser = parse_param)]
    pub params: Vec<(String, String)>,
    /// An extra `infermeter run` argument for every shard (repeatable), e.g. `--run-arg=--max-send-lag=2ms`.
    #[arg(long = "run-arg", value_name = "ARG", allow_hyphen_values = true)]
    pub run_args: Vec<String>,
    /// Directory to write the manifests into.
    #[arg(long, short, value_name = "DIR", default_value = "k8s")]
    pub out: PathBuf,
}

pub fn run(args: K8sArgs) -> Result<(), Error> {
    let name = args
        .name
        .unwrap_or_else(|| app::manifest_name(&args.scenario));
    let opts = K8sOptions {
        name: name.clone(),
        namespace: args.namespace,
        image: args.image,
        shards: args.shards,
        cpus: args.cpus,
        memory: args.memory,
        port: args.port,
        params: args.params,
        results_claim: args.results_claim,
        spread_required: !args.prefer_spread,
        run_args: args.run_args,
    };
    for f in app::write_manifests(&args.scenario, &opts, &args.out)? {
        outln!("{}", f.display());
    }
    outln!(
        "apply: kubectl apply -f {dir}; wait: kubectl wait --for=condition=complete job/{name} \
         (or condition=failed); merged: kubectl logs job/{name} (shard 0)",
        dir = args.out.display()
    );
    Ok(())
}
