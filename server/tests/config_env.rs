//! Configuration from the environment: `TOLLGATE__SECTION__KEY` overrides the
//! file; other `TOLLGATE_*` variables (the CLI's) and unknown keys are at most
//! a warning; an unknown key in the file stays an error naming the key.

mod common;

use common::*;
use std::io::{BufRead, BufReader, Read};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// Starts `tollgate serve --config FILE` with exactly `env` among the
/// `TOLLGATE*` variables; returns the address it listens on (if it got
/// there) and what it wrote (stdout, where the log goes, and stderr).
fn serve_with(config: &std::path::Path, env: &[(&str, &str)]) -> (Option<String>, String) {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_tollgate"));
    cmd.arg("serve")
        .arg("--config")
        .arg(config)
        .env("RUST_LOG", "warn")
        .env("NO_COLOR", "1")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    for (k, _) in std::env::vars() {
        if k.starts_with("TOLLGATE") {
            cmd.env_remove(k);
        }
    }
    for (k, v) in env {
        cmd.env(k, v);
    }
    let mut child = cmd.spawn().expect("spawn tollgate");
    let stdout = child.stdout.take().expect("stdout");
    let mut stderr = child.stderr.take().expect("stderr");
    let (tx, rx) = std::sync::mpsc::channel();
    let reader = std::thread::spawn(move || {
        let mut out = String::new();
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            if let Some(addr) = line.strip_prefix("tollgate listening on http://") {
                let _ = tx.send(addr.trim().to_string());
            }
            out.push_str(&line);
            out.push('\n');
        }
        out
    });
    let started = Instant::now();
    let mut addr = None;
    while started.elapsed() < Duration::from_secs(60) {
        if let Ok(a) = rx.recv_timeout(Duration::from_millis(100)) {
            addr = Some(a);
            break;
        }
        if child.try_wait().expect("try_wait").is_some() {
            break;
        }
    }
    // Give the start-up warnings a moment to be written, then stop the server.
    std::thread::sleep(Duration::from_millis(300));
    let _ = child.kill();
    let _ = child.wait();
    let mut err = reader.join().unwrap_or_default();
    let _ = stderr.read_to_string(&mut err);
    (addr, err)
}

#[test]
fn the_clis_variables_and_unknown_keys_do_not_stop_serve() {
    let dir = TestDir::new();
    let (addr, err) = serve_with(
        &dir.config_path(),
        &[
            ("TOLLGATE_URL", "http://127.0.0.1:9"),
            ("TOLLGATE_API_KEY", "some-key-0123456789"),
            ("TOLLGATE__NOPE__KEY", "1"),
            ("TOLLGATE__SERVER__NO_SUCH_KEY", "1"),
            ("TOLLGATE_SERVER__BIND", "127.0.0.1:1"),
        ],
    );
    assert!(addr.is_some(), "serve did not start:\n{err}");
    assert!(
        err.contains("TOLLGATE__NOPE__KEY"),
        "warned about the unknown key:\n{err}"
    );
    assert!(err.contains("TOLLGATE__SERVER__NO_SUCH_KEY"), "{err}");
    assert!(err.contains("TOLLGATE_SERVER__BIND is not read"), "{err}");
    assert!(
        !err.contains("TOLLGATE_URL"),
        "the CLI's variables are not configuration:\n{err}"
    );
}

#[test]
fn double_underscore_variables_override_the_file() {
    let dir = TestDir::new();
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let bind = format!("127.0.0.1:{port}");
    let (addr, err) = serve_with(&dir.config_path(), &[("TOLLGATE__SERVER__BIND", &bind)]);
    assert_eq!(addr.as_deref(), Some(bind.as_str()), "{err}");

    // A known key with a bad value is an error naming it.
    let (addr, err) = serve_with(
        &dir.config_path(),
        &[("TOLLGATE__SERVER__BIND", "not-an-address")],
    );
    assert!(addr.is_none());
    assert!(err.to_lowercase().contains("server.bind"), "{err}");
}

#[test]
fn an_unknown_key_in_the_file_is_an_error_naming_it() {
    let dir = TestDir::new();
    let path = dir.config_path();
    let text = std::fs::read_to_string(&path).unwrap();
    std::fs::write(
        &path,
        text.replace("[server]\n", "[server]\nbindd = \"127.0.0.1:0\"\n"),
    )
    .unwrap();
    let (addr, err) = serve_with(&path, &[]);
    assert!(addr.is_none(), "started with an unknown key");
    assert!(err.contains("bindd"), "{err}");
}
