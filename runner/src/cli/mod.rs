//! The command line: [`args::Cli`] (clap), the validated [`crate::run::plan::RunPlan`] it becomes,
//! and [`dispatch`] to the commands.

pub mod args;
mod commands;
mod output;
pub mod plan;
pub mod sim;
pub mod stdout;

use crate::errors::{Code, Error};

/// Runs the command the arguments name.
pub async fn dispatch(command: args::Command) -> Result<Code, Error> {
    use args::Command;
    match command {
        Command::Run(run) => commands::run(&run).await,
        Command::List(list) => commands::list(&list),
        Command::Lint(lint) => commands::lint(&lint),
        Command::Images(images) => commands::images(&images),
        Command::Cleanup(args) => commands::cleanup(&args).await,
        Command::Prepull(args) => commands::prepull(&args).await,
        Command::Report(args) => commands::report(&args),
        Command::Diagnose(args) => commands::diagnose(&args),
        Command::Diff(args) => commands::diff(&args),
        Command::Results(args) => commands::results(&args).await,
        Command::Watch(args) => commands::watch(&args).await,
        Command::History(args) => commands::history(&args),
        Command::Sim(sim) => sim::run(sim).await,
    }
}
