//! The console (`standin console`) in a real browser: Debian's Chromium, headless, driven
//! through its WebDriver against the console on the LocalStack stack. It walks a
//! conversation with a question: the list shows it waiting, bad input in the reply form
//! gets the API's error beside the field, the reply answers it, the timeline shows the
//! final note, and the artifact's preview shows its text. A screenshot of each page is
//! written under the test logs (`console/`). A page of another site cannot drive it.

#![allow(clippy::expect_used, clippy::unwrap_used)] // tests fail loudly by design

use std::path::PathBuf;
use std::process::Stdio;
use std::time::{Duration, Instant};

use fantoccini::{Client, ClientBuilder, Locator};
use serde_json::json;
use standin_integration::agent::{Behaviour, TestAgent};
use standin_integration::e2e::{INPUT_REQUIRED, SOON, start_as};
use standin_integration::stack::{Stack, unique};
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{Child, Command};

const AGENT_PORT: u16 = 27185;
/// A PNG of one pixel: the image an artifact's preview draws.
const DOT_PNG: &str = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_operator_answers_a_question_and_reads_the_result_in_the_browser() {
    let stack = Stack::under_test().await;
    let agent = TestAgent::start(AGENT_PORT, Behaviour::default()).await;
    agent.script_turn(&[
        ("TASK_STATE_WORKING", "Sketching the widget"),
        (INPUT_REQUIRED, "Which colour?"),
    ]);
    agent.script_turn(&[("TASK_STATE_COMPLETED", "Painted blue")]);
    let agent_id = unique("console");
    let (status, body) = stack
        .control(
            "PUT",
            &format!("/agents/{agent_id}"),
            Some(json!({"url": format!("http://127.0.0.1:{AGENT_PORT}"), "follow_interval": 1})),
        )
        .await;
    assert_eq!(status, 200, "{body}");
    let task = unique("console-task");
    start_as(&stack, &agent_id, &task).await;
    // While it asks, the agent makes three artifacts: a text, a table of data, an image.
    agent.make_while_asked("widget.txt", "a blue widget").await;
    let remote = agent.some_task().await;
    let table = json!({"artifactId": "a-table", "name": "table",
        "parts": [{"data": {"rows": [["blue", 3]]}}]});
    agent.artifact_update(&remote, table, false, true).await;
    let dot = json!({"artifactId": "a-dot", "name": "dot.png",
        "parts": [{"raw": DOT_PNG, "mediaType": "image/png", "filename": "dot.png"}]});
    agent.artifact_update(&remote, dot, false, true).await;
    wait_for_state(&stack, &task, INPUT_REQUIRED).await;

    let (mut console, url) = console(&stack).await;
    let (driver, browser) = browser().await;
    let shots = screenshots();

    // The list: the stand-in, waiting on its question.
    browser
        .goto(&format!("{url}standins?agent={agent_id}"))
        .await
        .unwrap();
    let row = browser
        .wait()
        .for_element(Locator::XPath(&format!("//tr[th/a[text()='{task}']]")))
        .await
        .expect("the stand-in is listed");
    let row_text = row.text().await.unwrap();
    assert!(row_text.contains("INPUT_REQUIRED"), "{row_text}");
    assert!(row_text.contains("Which colour?"), "{row_text}");
    shot(&browser, &shots, "standins").await;

    // Its page: the question in the timeline, the chart of when things happened.
    click(&browser, Locator::LinkText(&task)).await;
    let timeline = element(&browser, ".timeline", "the stand-in's timeline").await;
    let said = timeline.text().await.unwrap();
    assert!(said.contains("The parent started it"), "{said}");
    assert!(said.contains("Which colour?"), "{said}");
    let marks = browser
        .find_all(Locator::Css("svg.chart circle.note"))
        .await
        .unwrap();
    assert!(marks.len() >= 2, "a mark per note heard: {}", marks.len());
    let changes = browser
        .find_all(Locator::Css("svg.chart circle.change"))
        .await
        .unwrap();
    assert!(!changes.is_empty(), "the agent's own timestamps are drawn");

    // Bad input: the API refuses an empty answer; its words stand beside the field.
    click(&browser, Locator::Css("#reply-form button")).await;
    let error = element(
        &browser,
        "#reply-text-error",
        "the refusal beside the answer's field",
    )
    .await;
    let words = error.text().await.unwrap();
    assert!(words.contains("must not be empty"), "{words}");
    // The page's own form token, for the cross-site checks at the end.
    let token = browser
        .find(Locator::Css("#reply-form input[name=token]"))
        .await
        .unwrap()
        .attr("value")
        .await
        .unwrap()
        .unwrap();
    let field = browser.find(Locator::Css("#reply-text")).await.unwrap();
    assert_eq!(
        field.attr("aria-invalid").await.unwrap().as_deref(),
        Some("true")
    );
    shot(&browser, &shots, "reply-refused").await;

    // The answer: the reply form sends it, and the timeline shows the final note.
    field.send_keys("blue").await.unwrap();
    click(&browser, Locator::Css("#reply-form button")).await;
    let notice = element(&browser, ".notice", "the reply's notice").await;
    assert!(notice.text().await.unwrap().contains("reply was taken"));
    // No reload: the page's own refresh brings the final note in.
    let finished = timeline_shows(&browser, &["Painted blue", "(final)"]).await;
    assert!(finished.contains("The parent replied"), "{finished}");
    assert!(
        finished.contains("watching by "),
        "each note after the first wait names its watch: {finished}"
    );
    assert!(
        finished.find("The parent replied") < finished.find("Painted blue"),
        "the reply sits before the note it led to: {finished}"
    );
    // Reloaded, the ended stand-in's page offers no forms.
    browser.refresh().await.unwrap();
    element(&browser, ".timeline", "the timeline").await;
    assert!(
        browser
            .find_all(Locator::Css("#reply-form"))
            .await
            .unwrap()
            .is_empty(),
        "an ended stand-in takes no reply"
    );
    shot(&browser, &shots, "standin").await;

    let page = browser.current_url().await.unwrap().to_string();
    artifacts_previewed(&browser, &page, &shots).await;

    // The agents: the registry's entry, its card read.
    browser.goto(&format!("{url}agents")).await.unwrap();
    let agent_row = browser
        .wait()
        .for_element(Locator::XPath(&format!("//tr[th[text()='{agent_id}']]")))
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(
        agent_row.contains("registry") && agent_row.contains("yes"),
        "{agent_row}"
    );
    shot(&browser, &shots, "agents").await;

    agent.script_turn(&[(INPUT_REQUIRED, "Which size?")]);
    cancelled_in_the_browser(&stack, &browser, &url, &agent_id).await;

    browser.close().await.unwrap();
    drop(driver);

    // Another site's page cannot drive it: not by posting a form (even one that carries
    // the token), not by loading a page as its resource, not by a name of its own
    // resolving to loopback.
    let http = reqwest::Client::new();
    let posted = http
        .post(format!("{url}standins/{task}/cancel"))
        .header("origin", "https://elsewhere.example")
        .header("content-type", "application/x-www-form-urlencoded")
        .body(format!("reason=not+yours&token={token}"))
        .send()
        .await
        .unwrap();
    assert_eq!(posted.status(), 403);
    let embedded = http
        .get(format!("{url}standins"))
        .header("sec-fetch-site", "cross-site")
        .header("sec-fetch-mode", "no-cors")
        .send()
        .await
        .unwrap();
    assert_eq!(embedded.status(), 403);
    let port = url.trim_end_matches('/').rsplit(':').next().unwrap();
    let rebound = http
        .get(format!("{url}standins"))
        .header("host", format!("rebound.example:{port}"))
        .send()
        .await
        .unwrap();
    assert_eq!(rebound.status(), 403);
    let forged = http
        .post(format!("{url}standins/{task}/cancel"))
        .header("content-type", "application/x-www-form-urlencoded")
        .body("reason=no+token&token=guessed")
        .send()
        .await
        .unwrap();
    assert_eq!(forged.status(), 403);
    let _ = console.kill().await;
}

/// Each artifact's preview from the stand-in's page: the text shown, the table's data as
/// JSON, the image drawn; and its download an attachment, never the agent's own type.
async fn artifacts_previewed(browser: &Client, page: &str, shots: &std::path::Path) {
    click(browser, Locator::LinkText("widget.txt")).await;
    let preview = element(browser, "pre.preview", "the text's preview").await;
    assert_eq!(preview.text().await.unwrap(), "a blue widget");
    shot(browser, shots, "artifact").await;

    browser.goto(page).await.unwrap();
    click(browser, Locator::LinkText("table")).await;
    let data = element(browser, "pre.preview", "the table's preview").await;
    let shown: serde_json::Value = serde_json::from_str(&data.text().await.unwrap()).unwrap();
    assert_eq!(shown, json!({"rows": [["blue", 3]]}));

    browser.goto(page).await.unwrap();
    click(browser, Locator::LinkText("dot.png")).await;
    element(browser, ".part img", "the image").await;
    let drawn = browser
        .execute(
            "const img = document.querySelector('.part img'); \
             return img.complete ? img.naturalWidth : -1;",
            vec![],
        )
        .await
        .unwrap();
    assert_eq!(drawn, json!(1), "the image is drawn, one pixel wide");
    let link = browser
        .find(Locator::LinkText("Download"))
        .await
        .unwrap()
        .prop("href")
        .await
        .unwrap()
        .unwrap();
    let download = reqwest::get(&link).await.unwrap();
    let header = |name: &str| {
        download.headers()[name]
            .to_str()
            .unwrap_or_default()
            .to_owned()
    };
    assert_eq!(header("content-type"), "application/octet-stream");
    assert_eq!(
        header("content-disposition"),
        "attachment; filename=\"dot.png\""
    );
    use base64::Engine as _;
    let bytes = download.bytes().await.unwrap();
    let png = base64::engine::general_purpose::STANDARD
        .decode(DOT_PNG)
        .unwrap();
    assert_eq!(bytes.as_ref(), png.as_slice());
}

/// A second stand-in of the agent, cancelled from its page: the reason reaches the final
/// note, which the page's refresh brings in.
async fn cancelled_in_the_browser(stack: &Stack, browser: &Client, url: &str, agent_id: &str) {
    let second = unique("console-cancel");
    start_as(stack, agent_id, &second).await;
    wait_for_state(stack, &second, INPUT_REQUIRED).await;
    browser
        .goto(&format!("{url}standins/{second}"))
        .await
        .unwrap();
    let reason = element(browser, "#cancel-reason", "the cancel's reason").await;
    reason.send_keys("not needed any more").await.unwrap();
    click(browser, Locator::Css("#cancel-form button")).await;
    let notice = element(browser, ".notice", "the cancel's notice").await;
    assert!(notice.text().await.unwrap().contains("cancel was taken"));
    timeline_shows(browser, &["CANCELED (final)", "not needed any more"]).await;
}

/// The timeline's text once it shows every one of `words`, brought in by the page's own
/// refresh (the test never reloads).
async fn timeline_shows(browser: &Client, words: &[&str]) -> String {
    let deadline = Instant::now() + SOON;
    loop {
        // The live part is swapped whole: an element read just before a swap is gone.
        let said = match browser.find(Locator::Css(".timeline")).await {
            Ok(timeline) => timeline.text().await.unwrap_or_default(),
            Err(_) => String::new(),
        };
        if words.iter().all(|word| said.contains(word)) {
            return said;
        }
        assert!(
            Instant::now() < deadline,
            "the timeline never showed {words:?}: {said}"
        );
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
}

async fn click(browser: &Client, locator: Locator<'_>) {
    browser.find(locator).await.unwrap().click().await.unwrap();
}

/// The element `css` once the page shows it, else a failure with the page as it is.
async fn element(browser: &Client, css: &str, what: &str) -> fantoccini::elements::Element {
    match browser.wait().for_element(Locator::Css(css)).await {
        Ok(found) => found,
        Err(err) => {
            let url = browser
                .current_url()
                .await
                .map(|u| u.to_string())
                .unwrap_or_default();
            let page = browser.source().await.unwrap_or_default();
            panic!("{what}: no {css} ({err}) on {url}:\n{page}");
        }
    }
}

/// Waits until the stand-in's row shows `state`.
async fn wait_for_state(stack: &Stack, task: &str, state: &str) {
    let deadline = Instant::now() + SOON;
    loop {
        let row = stack.row_status(task).await;
        if row["state"] == state {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "{task} never reached {state}: {row}"
        );
        tokio::time::sleep(Duration::from_millis(300)).await;
    }
}

/// `standin console` on a free loopback port, and the address it printed.
async fn console(stack: &Stack) -> (Child, String) {
    let target = PathBuf::from(std::env::var("CARGO_TARGET_DIR").expect("set by scripts/env.sh"));
    let binary = target.join("debug/standin");
    assert!(
        binary.exists(),
        "{} is not built: `cargo build -p standin-cli`",
        binary.display()
    );
    let endpoint = std::env::var("AWS_ENDPOINT_URL").expect("set by `make test`");
    let mut child = Command::new(binary)
        .args(["--stack", &stack.name, "--endpoint", &endpoint])
        .args(["console", "--no-open", "--listen", "127.0.0.1:0"])
        .stdout(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .expect("the console starts");
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let line = tokio::time::timeout(SOON, lines.next_line())
        .await
        .expect("the console prints its address")
        .unwrap()
        .unwrap_or_default();
    let url = line.rsplit(' ').next().unwrap_or_default().to_owned();
    assert!(url.starts_with("http://127.0.0.1:"), "{line}");
    (child, url)
}

/// chromedriver and the Chromium it starts, in a process group of their own: stopped
/// together, and the browser's profile removed, when the test ends, also by a failure.
struct Driver {
    child: Child,
    profile: PathBuf,
}

impl Drop for Driver {
    fn drop(&mut self) {
        if let Some(pid) = self.child.id() {
            let _ = std::process::Command::new("kill")
                .args(["-KILL", "--", &format!("-{pid}")])
                .status();
        }
        let _ = std::fs::remove_dir_all(&self.profile);
    }
}

/// Chromium, headless, through its own WebDriver on a free loopback port.
async fn browser() -> (Driver, Client) {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let profile = std::env::temp_dir().join(format!("standin-console-{}", std::process::id()));
    let driver = Driver {
        child: Command::new("/usr/bin/chromedriver")
            .args([format!("--port={port}"), "--allowed-ips=127.0.0.1".into()])
            .stdout(Stdio::null())
            .process_group(0)
            .kill_on_drop(true)
            .spawn()
            .expect("chromedriver starts (scripts/test installs Debian's chromium-driver)"),
        profile: profile.clone(),
    };
    let options = json!({
        "binary": "/usr/bin/chromium",
        "args": ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
            "--disable-background-networking", "--disable-component-update", "--disable-sync",
            "--disable-crash-reporter", "--disable-breakpad",
            "--window-size=1280,1000", format!("--user-data-dir={}", profile.display())],
    });
    let mut capabilities = serde_json::Map::new();
    capabilities.insert("browserName".into(), json!("chrome"));
    capabilities.insert("goog:chromeOptions".into(), options);
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let connected = ClientBuilder::rustls()
            .unwrap()
            .capabilities(capabilities.clone())
            .connect(&format!("http://127.0.0.1:{port}"))
            .await;
        match connected {
            Ok(client) => return (driver, client),
            Err(err) if Instant::now() < deadline => {
                let _ = err;
                tokio::time::sleep(Duration::from_millis(200)).await;
            }
            Err(err) => panic!("no browser session: {err}"),
        }
    }
}

fn screenshots() -> PathBuf {
    let logs = std::env::var("STANDIN_CACHE").map_or_else(|_| std::env::temp_dir(), PathBuf::from);
    let dir = logs.join("test-logs/console");
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

async fn shot(browser: &Client, dir: &std::path::Path, name: &str) {
    let png = browser.screenshot().await.unwrap();
    assert!(png.starts_with(b"\x89PNG"), "a PNG");
    let path = dir.join(format!("{name}.png"));
    std::fs::write(&path, png).unwrap();
    eprintln!("screenshot: {}", path.display());
}
