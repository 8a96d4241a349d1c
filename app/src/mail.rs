//! The body of a notification mail, as a text part and an HTML part. The
//! request is drawn by the console's own read-only renderer
//! ([`SchemaView`]), so a mail shows what the token page shows. Leptos
//! escapes every text and attribute; the HTML has minimal inline styles (mail
//! clients drop style sheets), no external resources and no scripts.

use crate::form::SchemaView;
use leptos::prelude::*;
use serde_json::Value;

/// What one mail says; the server fills it in per recipient.
#[derive(Debug, Clone, PartialEq)]
pub struct Mail {
    pub recipient: String,
    /// The first sentence ("A workflow is waiting for your decision:").
    pub intro: String,
    pub title: String,
    /// The workflow's id (an escalation names its run in `intro` instead).
    pub workflow: Option<String>,
    /// The request and its `requestSchema`, when there is one to show.
    pub request: Option<(Value, Value)>,
    /// The deadline in words ("in 2 days — Sat 5 Dec, 13:00 UTC").
    pub deadline: Option<String>,
    /// The other people who may still decide.
    pub others: Vec<String>,
    /// Approvals still needed (approval gates).
    pub approvals_needed: Option<u32>,
    pub link: Option<Link>,
    /// The closing sentence (what the link may do, or that nothing can be done).
    pub note: String,
}

/// The recipient's own link and what its button says.
#[derive(Debug, Clone, PartialEq)]
pub struct Link {
    pub url: String,
    /// The button ("Open and decide", "View the request").
    pub label: String,
    /// The text part's line before the URL.
    pub open: String,
}

const BUTTON: &str = "display:inline-block;padding:10px 18px;background:#4338ca;color:#ffffff;\
                      text-decoration:none;border-radius:6px;font-weight:600";
const MUTED: &str = "color:#475569;font-size:14px";

impl Mail {
    /// "Still needed: 2 approvals." and "Who else may decide: …", as sentences.
    fn standing(&self) -> Vec<String> {
        let mut lines = Vec::new();
        if let Some(n) = self.approvals_needed {
            lines.push(match n {
                1 => "Still needed: 1 approval.".to_string(),
                n => format!("Still needed: {n} approvals."),
            });
        }
        if !self.others.is_empty() {
            lines.push(format!("Who else may decide: {}.", self.others.join(", ")));
        }
        lines
    }

    /// The plain-text part.
    pub fn text(&self) -> String {
        let mut out = format!(
            "Hello {},\n\n{}\n\n  {}\n",
            self.recipient, self.intro, self.title
        );
        if let Some(w) = &self.workflow {
            out.push_str(&format!("  workflow: {w}\n"));
        }
        if let Some(d) = &self.deadline {
            out.push_str(&format!("  deadline: {d}\n"));
        }
        for line in self.standing() {
            out.push_str(&format!("\n{line}"));
        }
        if let Some((value, _)) = &self.request {
            // JSON escapes every C0 line break; these three a mail client
            // may also break a line at are escaped too, so the run's data
            // cannot start a line of its own.
            let json = serde_json::to_string_pretty(value)
                .unwrap_or_default()
                .replace('\u{85}', "\\u0085")
                .replace('\u{2028}', "\\u2028")
                .replace('\u{2029}', "\\u2029");
            out.push_str("\n\nRequest:\n");
            for line in json.lines() {
                out.push_str(&format!("  {line}\n"));
            }
        } else {
            out.push('\n');
        }
        if let Some(link) = &self.link {
            out.push_str(&format!("\n{}\n{}\n", link.open, link.url));
        }
        out.push_str(&format!("\n{}\n", self.note));
        out
    }

    /// The HTML part: a whole document.
    pub fn html(&self) -> String {
        let workflow = self
            .workflow
            .clone()
            .map(|w| view! { <p style=MUTED>"Workflow: "{w}</p> });
        let deadline = self.deadline.clone().map(|d| {
            view! { <p style=MUTED>"Deadline: "<span id="deadline">{d}</span></p> }
        });
        let standing = self
            .standing()
            .into_iter()
            .map(|line| view! { <p style=MUTED>{line}</p> })
            .collect_view();
        let request = self.request.clone().map(|(value, schema)| {
            view! {
                <h2 style="font-size:16px;margin:20px 0 8px">"Request"</h2>
                <SchemaView value=value schema=schema />
            }
        });
        let button = self.link.clone().map(|link| {
            view! { <p style="margin:24px 0"><a id="open-link" href=link.url style=BUTTON>{link.label}</a></p> }
        });
        let body = view! {
            <html lang="en">
                <head>
                    <meta charset="utf-8" />
                    <title>{self.title.clone()}</title>
                </head>
                <body style="font-family:sans-serif;color:#0f172a;line-height:1.5;max-width:600px;margin:0 auto;padding:16px">
                    <p>"Hello "{self.recipient.clone()}","</p>
                    <p>{self.intro.clone()}</p>
                    <h1 style="font-size:20px;margin:16px 0 4px">{self.title.clone()}</h1>
                    {workflow}
                    {deadline}
                    {standing}
                    {request}
                    {button}
                    <p style=MUTED>{self.note.clone()}</p>
                </body>
            </html>
        };
        // Leptos marks text boundaries with empty comments for hydration; a
        // mail is never hydrated. Text is escaped, so no value contains one.
        format!("<!DOCTYPE html>\n{}", body.to_html().replace("<!>", ""))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn mail() -> Mail {
        Mail {
            recipient: "Mia & <Co>".into(),
            intro: "A workflow is waiting for your decision:".into(),
            title: "Pay <script>alert(1)</script> & co".into(),
            workflow: Some("pay".into()),
            request: Some((
                json!({"vendor": "<script>x</script> & sons", "amount": 12}),
                json!({"type": "object", "properties": {"vendor": {"type": "string", "title": "Vendor"}, "amount": {"type": "number"}}}),
            )),
            deadline: Some("in 2 days — Sat 5 Dec, 13:00 UTC".into()),
            others: vec!["Bob".into(), "Cat".into()],
            approvals_needed: Some(2),
            link: Some(Link {
                url: "https://t.example/t/ow2.a?x=1&y=2".into(),
                label: "Open and decide".into(),
                open: "Open this link to see the details and decide:".into(),
            }),
            note: "Opening it changes nothing.".into(),
        }
    }

    #[test]
    fn the_html_part_escapes_what_it_shows_and_carries_one_button() {
        let html = mail().html();
        assert!(!html.contains("<script"), "{html}");
        for needle in [
            "Pay &lt;script&gt;alert(1)&lt;/script&gt; &amp; co",
            "&lt;script&gt;x&lt;/script&gt; &amp; sons",
            "Mia &amp; &lt;Co&gt;",
            ">Vendor<",
            r#"href="https://t.example/t/ow2.a?x=1&amp;y=2""#,
            "in 2 days — Sat 5 Dec, 13:00 UTC",
            "Still needed: 2 approvals.",
            "Who else may decide: Bob, Cat.",
        ] {
            assert!(html.contains(needle), "missing {needle} in\n{html}");
        }
        assert_eq!(html.matches("<a ").count(), 1, "{html}");
        assert!(!html.contains("src="), "no external resources: {html}");
        assert!(!html.contains("<!>"), "{html}");
    }

    #[test]
    fn the_text_part_says_the_same_with_the_link_as_text() {
        let text = mail().text();
        for needle in [
            "Hello Mia & <Co>,",
            "Pay <script>alert(1)</script> & co",
            "workflow: pay",
            "deadline: in 2 days — Sat 5 Dec, 13:00 UTC",
            "Still needed: 2 approvals.",
            "Who else may decide: Bob, Cat.",
            "\"vendor\": \"<script>x</script> & sons\"",
            "Open this link to see the details and decide:\nhttps://t.example/t/ow2.a?x=1&y=2\n",
        ] {
            assert!(text.contains(needle), "missing {needle} in\n{text}");
        }
        // The run's data cannot start a line of its own, whatever breaks it holds.
        let planted = Mail {
            request: Some((
                json!({"note": "x\nOpen:\r\nhttps://evil.test/a\u{2028}https://evil.test/b\u{85}https://evil.test/c\u{2029}https://evil.test/d"}),
                json!({"type": "object"}),
            )),
            ..mail()
        }
        .text();
        let lines: Vec<&str> = planted
            .split(['\n', '\r', '\u{85}', '\u{2028}', '\u{2029}'])
            .filter(|l| l.trim_start().starts_with("https://evil"))
            .collect();
        assert!(lines.is_empty(), "{lines:?} in\n{planted}");
        assert!(
            planted.contains(r"https://evil.test/a\u2028https://evil.test/b"),
            "{planted}"
        );
        let without = Mail {
            link: None,
            request: None,
            others: vec![],
            approvals_needed: None,
            deadline: None,
            workflow: None,
            ..mail()
        };
        let text = without.text();
        assert!(!text.contains("http"), "{text}");
        assert!(!text.contains("Still needed"), "{text}");
        assert!(!text.contains("workflow:"), "{text}");
        assert!(!without.html().contains("<a "));
    }
}
