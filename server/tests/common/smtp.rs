//! A real SMTP server for the mail tests: Debian's `python3-aiosmtpd`
//! storing each message in a Maildir, read back and parsed as a mail client
//! would (`mailparse`).

use std::collections::HashSet;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

/// Debian's interpreter: the one `python3-aiosmtpd` is installed for (a
/// `python3` earlier on PATH may lack it).
const PYTHON: &str = "/usr/bin/python3";

/// An `aiosmtpd` child on 127.0.0.1; killed on drop.
pub struct Smtp {
    child: Child,
    pub port: u16,
    maildir: tempfile::TempDir,
    seen: HashSet<PathBuf>,
}

/// One received message, parsed.
#[derive(Debug, Clone)]
pub struct Received {
    /// The message as it arrived.
    pub raw: String,
    /// The top-level MIME type (`multipart/alternative`).
    pub mimetype: String,
    /// Decoded headers.
    pub to: String,
    pub subject: String,
    /// The decoded `text/plain` and `text/html` parts (empty when absent).
    pub text: String,
    pub html: String,
    /// The MIME types of the top-level parts, in order.
    pub parts: Vec<String>,
}

impl Smtp {
    /// Starts `aiosmtpd` on a free port and waits until it accepts.
    pub async fn start() -> Smtp {
        for _ in 0..5 {
            let port = std::net::TcpListener::bind("127.0.0.1:0")
                .and_then(|l| l.local_addr())
                .expect("a free port")
                .port();
            let maildir = tempfile::tempdir().expect("maildir");
            let mut child = Command::new(PYTHON)
                .args(["-m", "aiosmtpd", "-n", "-l", &format!("127.0.0.1:{port}")])
                .args(["-c", "aiosmtpd.handlers.Mailbox"])
                // A path that does not exist yet: Maildir creates it with its cur/new/tmp.
                .arg(maildir.path().join("mail"))
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(Stdio::inherit())
                .spawn()
                .expect("start aiosmtpd (apt-get install python3-aiosmtpd)");
            for _ in 0..200 {
                if tokio::net::TcpStream::connect(("127.0.0.1", port)).await.is_ok() {
                    return Smtp {
                        child,
                        port,
                        maildir,
                        seen: HashSet::new(),
                    };
                }
                if child.try_wait().expect("try_wait").is_some() {
                    break; // the port was taken meanwhile: try another
                }
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
            let _ = child.kill();
            let _ = child.wait();
        }
        panic!("aiosmtpd did not start");
    }

    /// The `[smtp]` section that sends here.
    pub fn toml(&self) -> String {
        format!(
            "\n[smtp]\nhost = \"127.0.0.1\"\nport = {}\ntls = \"none\"\nfrom = \"Tollgate <tollgate@example.com>\"\n",
            self.port
        )
    }

    /// The next message not yet returned, waiting up to `within`.
    pub async fn next(&mut self, within: Duration) -> Option<Received> {
        let deadline = tokio::time::Instant::now() + within;
        loop {
            let new = self.maildir.path().join("mail/new");
            let mut files: Vec<PathBuf> = std::fs::read_dir(&new)
                .map(|d| d.filter_map(|e| e.ok().map(|e| e.path())).collect())
                .unwrap_or_default();
            // Maildir names start with the delivery time: oldest first.
            files.sort();
            if let Some(path) = files.into_iter().find(|p| !self.seen.contains(p)) {
                let raw = std::fs::read(&path).expect("read message");
                self.seen.insert(path);
                return Some(parse(&raw));
            }
            if tokio::time::Instant::now() >= deadline {
                return None;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    /// The next message; panics when none arrives within 20 s.
    pub async fn expect(&mut self) -> Received {
        self.next(Duration::from_secs(20)).await.expect("a mail arrives")
    }
}

impl Drop for Smtp {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Parses a message as a mail client does: decoded headers, and the bodies
/// of its parts with their transfer encoding and charset undone.
pub fn parse(raw: &[u8]) -> Received {
    use mailparse::MailHeaderMap;
    let mail = mailparse::parse_mail(raw).expect("a parsable message");
    let header = |name: &str| mail.headers.get_first_value(name).unwrap_or_default();
    let body_of = |mime: &str| {
        mail.subparts
            .iter()
            .find(|p| p.ctype.mimetype == mime)
            .map(|p| p.get_body().expect("a decodable part"))
            .unwrap_or_default()
    };
    Received {
        raw: String::from_utf8_lossy(raw).into_owned(),
        mimetype: mail.ctype.mimetype.clone(),
        to: header("To"),
        subject: header("Subject"),
        text: body_of("text/plain"),
        html: body_of("text/html"),
        parts: mail.subparts.iter().map(|p| p.ctype.mimetype.clone()).collect(),
    }
}
