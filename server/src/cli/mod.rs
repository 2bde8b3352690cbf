//! The command line of `weave-console`, parsed by `clap` (derive): one `Args` struct per
//! subcommand, so help, errors (exit code 2) and environment fallbacks are uniform. Each
//! subcommand module exposes `run(args) -> ExitCode`.

pub mod audit;
pub mod backup;
pub mod bench;
pub mod bench_authority;
pub mod bench_cluster;
pub mod bench_gateway;
pub mod bench_restart;
pub mod conformance;
pub mod dev;
pub mod live;
pub mod org;
pub mod scenarios;
pub mod serve;

use clap::{Parser, Subcommand};

/// The MissionWeave console and embedded protocol authority (MissionWeaveProtocol 0.1).
#[derive(Debug, Parser)]
#[command(
    name = "weave-console",
    version,
    about,
    args_conflicts_with_subcommands = true,
    after_help = "Without a subcommand, `serve` runs (its flags may be given directly)."
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Option<Command>,
    /// Flags of `serve`, the default subcommand.
    #[command(flatten)]
    pub serve: serve::ServeArgs,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Serve the console with the embedded Group Authority (the default).
    Serve(Box<serve::ServeArgs>),
    /// Run the protocol core against the official conformance vectors.
    Conformance(conformance::ConformanceArgs),
    /// Run the behavioural scenarios (signed Commands and their expected Events or wire error
    /// codes) against the embedded authority, with a coverage line.
    Scenarios(scenarios::ScenariosArgs),
    /// Run a benchmark; benchmarks print figures and assert nothing.
    #[command(subcommand)]
    Bench(bench::BenchCommand),
    /// Development tools against a running development server: the principals file for
    /// external Agents, and the development human's decisions.
    #[command(subcommand)]
    Dev(dev::DevCommand),
    /// An Organization of your own: create it, invite humans, add Agents, rotate and revoke
    /// keys (the directory `serve --data` serves).
    #[command(subcommand)]
    Org(org::OrgCommand),
    /// Copy a data directory's log consistently while the server runs, with its files and a
    /// manifest (docs/operations.md).
    Backup(backup::BackupArgs),
    /// Check a backup (every Event's signature, the sequences, the projection hash) and put
    /// it in place as a data directory.
    Restore(backup::RestoreArgs),
    /// Write an audit bundle of some Groups (safe while the server runs): Registry, Agent
    /// Cards, Events, First-Admission Records, Artifact hashes, sealed (docs/audit.md).
    Export(audit::ExportArgs),
    /// Verify an audit bundle offline and print who decided what, when, on which evidence.
    VerifyExport(audit::VerifyExportArgs),
}

impl Cli {
    /// The subcommand to run: `serve` with the top-level flags when none is named.
    pub fn into_command(self) -> Command {
        self.command
            .unwrap_or_else(|| Command::Serve(Box::new(self.serve)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(args: &[&str]) -> Result<Command, clap::Error> {
        Cli::try_parse_from(std::iter::once("weave-console").chain(args.iter().copied()))
            .map(Cli::into_command)
    }

    #[test]
    fn serve_is_the_default_and_takes_its_flags_at_the_top() {
        for args in [&[][..], &["serve"][..]] {
            assert!(matches!(parse(args), Ok(Command::Serve(_))), "{args:?}");
        }
        match parse(&["--addr", "127.0.0.1:9", "--data=d"]) {
            Ok(Command::Serve(s)) => {
                assert_eq!(s.addr, "127.0.0.1:9");
                assert_eq!(s.data, std::path::PathBuf::from("d"));
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn usage_errors_exit_with_code_2() {
        for args in [
            &["nope"][..],
            &["--bogus"][..],
            &["serve", "stray"][..],
            &["serve", "--addr"][..],
            &["bench"][..],
            &["bench", "nope"][..],
            &["bench", "authority", "--threads", "0"][..],
            &["bench", "authority", "--sizes", "1,x"][..],
            &["conformance", "--root"][..],
            &["dev"][..],
            &["dev", "principals"][..],
            &["dev", "principals", "--out", "f", "--load-agents", "33"][..],
            &[
                "dev",
                "principals",
                "--out",
                "f",
                "--scenarios",
                "--missions",
                "2",
            ][..],
            &["scenarios", "--url", "wss://h/ws"][..],
            &["export", "--out", "f"][..],
            &["export", "--group", "g", "--mission", "m", "--out", "f"][..],
            &["export", "--group", "g"][..],
            &["export", "--group", "g", "--out", "f", "--registry", "r"][..],
            &["verify-export"][..],
            &["scenarios", "--principals", "p.json"][..],
            &["serve", "--upstream", "wss://h/ws", "--dev-clock"][..],
            &["serve", "--upstream-ca", "c.pem"][..],
            &[
                "serve",
                "--upstream",
                "wss://h/ws",
                "--registry",
                "r",
                "--authority-key",
                "k",
            ][..],
            &["serve", "--message-rate-per-minute", "0"][..],
            &["bench", "gateway", "--agents", "33"][..],
            &["bench", "gateway", "--windows", "0"][..],
            &["bench", "gateway", "--windows", "65"][..],
            &["bench", "gateway", "--url", "wss://h/ws"][..],
            &["dev", "approve", "mission"][..],
            &["dev", "approve", "execution", "--work-item", "w"][..],
            &[
                "dev",
                "approve",
                "mission",
                "--mission",
                "m",
                "--request-changes",
                "x",
                "--comments",
                "y",
            ][..],
            &[
                "dev",
                "approve",
                "override",
                "--mission",
                "m",
                "--beneficiary",
                "a",
                "--policy",
                "nope",
                "--target-kind",
                "k",
                "--target-action",
                "t",
                "--reason",
                "r",
            ][..],
        ] {
            let e = parse(args).expect_err(&format!("{args:?} must be refused"));
            assert_eq!(e.exit_code(), 2, "{args:?}: {e}");
        }
        let help = parse(&["--help"]).expect_err("help is an early exit");
        assert_eq!(help.exit_code(), 0);
    }

    #[test]
    fn subcommands_parse_their_flags() {
        match parse(&["bench", "authority", "--sizes", "1000,10", "--threads", "3"]) {
            Ok(Command::Bench(bench::BenchCommand::Authority(a))) => {
                assert_eq!(a.sizes, vec![1000, 10]);
                assert_eq!(a.threads, Some(3));
                assert_eq!(a.batch, 64);
            }
            other => panic!("{other:?}"),
        }
        assert!(matches!(
            parse(&["bench", "core", "--ms", "5"]),
            Ok(Command::Bench(bench::BenchCommand::Core(c))) if c.ms == 5.0
        ));
        assert!(matches!(
            parse(&["scenarios", "--verbose"]),
            Ok(Command::Scenarios(s)) if s.verbose
        ));
        assert!(matches!(
            parse(&["scenarios", "--url", "wss://h:1/ws", "--principals", "p.json"]),
            Ok(Command::Scenarios(s)) if s.url.as_deref() == Some("wss://h:1/ws") && s.ca.is_none()
        ));
        match parse(&[
            "bench", "gateway", "--agents", "4", "--groups", "2", "--sizes", "10,20",
        ]) {
            Ok(Command::Bench(bench::BenchCommand::Gateway(g))) => {
                assert_eq!((g.agents, g.groups, g.sizes.clone()), (4, 2, vec![10, 20]));
                assert_eq!((g.subscribers, g.stalled, g.measure), (1000, 100, 4000));
                assert_eq!(g.windows, vec![2, 4], "64 and 128 closed loops by default");
            }
            other => panic!("{other:?}"),
        }
        // `--windows` alone: no wider rows; a list: those.
        for (args, want) in [
            (&["bench", "gateway", "--windows"][..], vec![]),
            (&["bench", "gateway", "--windows", "1,8"][..], vec![1, 8]),
        ] {
            match parse(args) {
                Ok(Command::Bench(bench::BenchCommand::Gateway(g))) => {
                    assert_eq!(g.windows, want, "{args:?}");
                }
                other => panic!("{other:?}"),
            }
        }
        match parse(&[
            "serve",
            "--upstream",
            "wss://h:1/ws",
            "--upstream-ca",
            "c.pem",
        ]) {
            Ok(Command::Serve(s)) => {
                assert_eq!(s.upstream.as_deref(), Some("wss://h:1/ws"));
                assert!(!s.dev_clock);
            }
            other => panic!("{other:?}"),
        }
        assert!(matches!(
            parse(&["serve", "--dev-clock", "--message-rate-per-minute", "5"]),
            Ok(Command::Serve(s)) if s.dev_clock && s.message_rate_per_minute == Some(5)
        ));
        assert!(matches!(
            parse(&["dev", "principals", "--scenarios", "--out", "f"]),
            Ok(Command::Dev(dev::DevCommand::Principals(p))) if p.scenarios
        ));
    }

    #[test]
    fn dev_subcommands_parse_their_flags() {
        match parse(&[
            "dev",
            "principals",
            "--out",
            "p.json",
            "--url",
            "http://h:1",
            "--data",
            "d",
        ]) {
            Ok(Command::Dev(dev::DevCommand::Principals(p))) => {
                assert_eq!(p.out, std::path::PathBuf::from("p.json"));
                assert_eq!((p.load_agents, p.missions), (1, 1));
                assert_eq!(p.server.url, "http://h:1");
                assert_eq!(p.server.data, std::path::PathBuf::from("d"));
            }
            other => panic!("{other:?}"),
        }
        match parse(&[
            "dev",
            "principals",
            "--out",
            "p",
            "--load-agents",
            "32",
            "--missions",
            "0",
        ]) {
            Ok(Command::Dev(dev::DevCommand::Principals(p))) => {
                assert_eq!((p.load_agents, p.missions), (32, 0));
            }
            other => panic!("{other:?}"),
        }
        match parse(&[
            "dev",
            "approve",
            "execution",
            "--work-item",
            "w",
            "--operations",
            "a,b",
        ]) {
            Ok(Command::Dev(dev::DevCommand::Approve(dev::ApproveCommand::Execution(e)))) => {
                assert_eq!(e.operations, ["a", "b"]);
                assert_eq!(e.expires_in, 300);
            }
            other => panic!("{other:?}"),
        }
        match parse(&[
            "dev",
            "approve",
            "override",
            "--mission",
            "m",
            "--beneficiary",
            "a",
            "--policy",
            "active_work_items",
            "--target-kind",
            "work.start",
            "--target-action",
            "t",
            "--reason",
            "r",
        ]) {
            Ok(Command::Dev(dev::DevCommand::Approve(dev::ApproveCommand::Override(o)))) => {
                assert_eq!(o.policy, dev::PolicyName::ActiveWorkItems);
            }
            other => panic!("{other:?}"),
        }
        assert!(matches!(
            parse(&["dev", "approve", "mission", "--mission", "m", "--request-changes", "more tests"]),
            Ok(Command::Dev(dev::DevCommand::Approve(dev::ApproveCommand::Mission(m))))
                if m.request_changes.as_deref() == Some("more tests")
        ));
    }
}
