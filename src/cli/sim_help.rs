//! `infermeter sim --help` shows each setting's default, read from [`SimConfig::default`]
//! rather than written into the flags: the flags stay `Option`s (so `--config FILE` values are
//! not overridden by defaults), and a setting the simulator adds gets its default shown with
//! no edit here, since a flag's long name is the setting's kebab-case key.

use clap::Command;

use crate::app::SimConfig;

/// `cmd` with `[default: …]` appended to the help of every `sim` flag that is a setting.
pub fn with_defaults(cmd: Command) -> Command {
    let defaults = serde_json::to_value(SimConfig::default()).unwrap_or_default();
    cmd.mut_subcommand("sim", |sim| {
        let flags: Vec<(clap::Id, String)> = sim
            .get_arguments()
            .filter_map(|a| Some((a.get_id().clone(), a.get_long()?.to_string())))
            .collect();
        flags.into_iter().fold(sim, |sim, (id, long)| {
            let Some(value) = defaults.get(&long) else {
                return sim;
            };
            let shown = match value {
                serde_json::Value::String(s) => s.clone(),
                other => other.to_string(),
            };
            sim.mut_arg(id, |a| {
                let help = a.get_help().map(|h| h.to_string()).unwrap_or_default();
                a.help(format!("{help} [default: {shown}]"))
            })
        })
    })
}
