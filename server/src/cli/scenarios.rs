//! `weave-console scenarios [--dir DIR] [--url URL --principals FILE]`: runs the behavioural
//! conformance suite (scenario files of signed-Command steps) against the embedded authority,
//! or with `--url` against a live server over the binding (`live`), and prints
//! `scenarios: N passed, M failed` (steps) and the coverage line.

use simulation::scenario::{Coverage, ScenarioReport, run as run_on, run_in_process};
use std::path::PathBuf;
use std::process::ExitCode;

use super::live::{Allocator, LiveOrg, LiveTarget};
use crate::endpoint::Endpoint;

fn default_dir() -> PathBuf {
    let local = PathBuf::from("simulation/tests/scenarios");
    if local.is_dir() {
        local
    } else {
        PathBuf::from(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../simulation/tests/scenarios"
        ))
    }
}

/// `weave-console scenarios`.
#[derive(Debug, clap::Args)]
pub struct ScenariosArgs {
    /// The scenario files (default: simulation/tests/scenarios).
    #[arg(long, value_name = "DIR")]
    pub dir: Option<PathBuf>,
    /// List every scenario and what is not covered yet.
    #[arg(long, short)]
    pub verbose: bool,
    /// Run against a live server over the binding (`wss://HOST:PORT/ws`; `ws://` on
    /// loopback), started with `serve --dev-clock` on a new data directory.
    #[arg(long, value_name = "URL", requires = "principals")]
    pub url: Option<String>,
    /// The scenario principals file of that server (`dev principals --scenarios`).
    #[arg(long, value_name = "FILE", requires = "url")]
    pub principals: Option<PathBuf>,
    /// The PEM certificate to trust for `wss://` (default: the one the principals file
    /// carries).
    #[arg(long, value_name = "FILE", requires = "url")]
    pub ca: Option<PathBuf>,
}

/// Where the scenarios run.
enum Where {
    InProcess,
    Live {
        ep: Endpoint,
        org: Box<LiveOrg>,
        alloc: Allocator,
    },
}

impl Where {
    fn open(args: &ScenariosArgs) -> Result<Where, String> {
        let (Some(url), Some(file)) = (&args.url, &args.principals) else {
            return Ok(Where::InProcess);
        };
        let org = LiveOrg::load(file)?;
        let cert = match &args.ca {
            Some(ca) => {
                Some(std::fs::read_to_string(ca).map_err(|e| format!("{}: {e}", ca.display()))?)
            }
            None => org.certificate.clone(),
        };
        let ep = Endpoint::new(url, cert.as_deref())?;
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(|e| e.to_string())?;
        rt.block_on(async {
            ep.check_keys(&org).await?;
            ep.set_clock(None).await
        })?;
        Ok(Where::Live {
            ep,
            org: Box::new(org),
            alloc: Allocator::default(),
        })
    }

    fn run(&mut self, text: &[u8]) -> ScenarioReport {
        match self {
            Where::InProcess => run_in_process(text),
            Where::Live { ep, org, alloc } => run_on(text, |principals| {
                LiveTarget::open(ep, org, alloc, principals)
            }),
        }
    }

    fn finish(&self) {
        if let Where::Live { alloc, .. } = self
            && let Ok(t) = alloc.transport.lock()
        {
            println!("{}", t.line());
        }
        if let Where::Live { ep, .. } = self
            && let Ok(rt) = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
        {
            let _ = rt.block_on(ep.set_clock(None));
        }
    }
}

pub fn run(args: &ScenariosArgs) -> ExitCode {
    let verbose = args.verbose;
    let dir = args.dir.clone().unwrap_or_else(default_dir);
    let mut files: Vec<PathBuf> = match std::fs::read_dir(&dir) {
        Ok(rd) => rd
            .flatten()
            .map(|e| e.path())
            .filter(|p| p.extension().is_some_and(|x| x == "json"))
            .collect(),
        Err(e) => {
            eprintln!(
                "weave-console scenarios: cannot read {}: {e}",
                dir.display()
            );
            return ExitCode::from(2);
        }
    };
    files.sort();
    let mut target = match Where::open(args) {
        Ok(t) => t,
        Err(e) => {
            eprintln!("weave-console scenarios: {e}");
            return ExitCode::from(2);
        }
    };
    let (mut passed, mut failed) = (0usize, 0usize);
    let mut coverage = Coverage::default();
    for f in &files {
        let report = match std::fs::read(f) {
            Ok(bytes) => target.run(&bytes),
            Err(e) => {
                eprintln!("{}: {e}", f.display());
                failed += 1;
                continue;
            }
        };
        passed += report.passed_steps();
        failed += report.failed_steps.len().max(usize::from(
            report.steps == 0 && !report.failures.is_empty(),
        ));
        coverage.merge(&report.coverage);
        if verbose || !report.failures.is_empty() {
            println!(
                "  {} ({}): {} of {} steps passed",
                f.file_name()
                    .map_or_else(String::new, |n| n.to_string_lossy().into_owned()),
                report.name,
                report.passed_steps(),
                report.steps
            );
        }
        for fail in &report.failures {
            println!("    FAIL {fail}");
        }
    }
    println!(
        "scenarios: {passed} passed, {failed} failed ({} files)",
        files.len()
    );
    println!("{}", coverage.line());
    target.finish();
    if verbose {
        for m in coverage.missing() {
            println!("  not covered: {m}");
        }
    }
    if failed == 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}
