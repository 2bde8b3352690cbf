//! Subcommands of `weave-console`. Each exposes `run(args) -> ExitCode`, where `args` are the
//! arguments after the subcommand name.

pub mod bench;
pub mod bench_authority;
pub mod conformance;
pub mod scenarios;
pub mod serve;

/// Splits `--flag=value` into `("--flag", Some("value"))`; other arguments come back unchanged.
pub fn split_flag(arg: &str) -> (&str, Option<&str>) {
    match arg.split_once('=') {
        Some((flag, value)) if flag.starts_with("--") => (flag, Some(value)),
        _ => (arg, None),
    }
}

/// Takes the value of `flag`: either the inline `--flag=value` part or the next argument.
pub fn flag_value<'a>(
    flag: &str,
    inline: Option<&'a str>,
    rest: &mut impl Iterator<Item = &'a String>,
) -> Result<&'a str, String> {
    match inline {
        Some(v) if !v.is_empty() => Ok(v),
        Some(_) => Err(format!("flag `{flag}` needs a value")),
        None => rest
            .next()
            .map(String::as_str)
            .ok_or_else(|| format!("flag `{flag}` needs a value")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn split_flag_handles_inline_values() {
        assert_eq!(
            split_flag("--addr=1.2.3.4:5"),
            ("--addr", Some("1.2.3.4:5"))
        );
        assert_eq!(split_flag("--addr"), ("--addr", None));
        assert_eq!(split_flag("a=b"), ("a=b", None));
    }

    #[test]
    fn flag_value_takes_next_argument() {
        let args = ["x".to_string()];
        let mut it = args.iter();
        assert_eq!(flag_value("--public", None, &mut it), Ok("x"));
        assert!(flag_value("--public", None, &mut it).is_err());
        assert!(flag_value("--public", Some(""), &mut it).is_err());
    }
}
