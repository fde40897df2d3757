//! `pangolin webhook` against the real server and a local endpoint: a webhook created, an event
//! dead-lettered by a failing endpoint, listed with its attempts, sent again once the endpoint
//! works, disabled and deleted.
#![allow(clippy::unwrap_used)]

mod common;

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpListener;
use std::sync::atomic::{AtomicU16, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use common::setup::setup;

/// An endpoint answering every POST with the status it is set to, keeping the `webhook-id`s.
struct Endpoint {
    url: String,
    status: Arc<AtomicU16>,
    ids: Arc<Mutex<Vec<String>>>,
}

fn endpoint(status: u16) -> Endpoint {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/hook", listener.local_addr().unwrap());
    let answer = Arc::new(AtomicU16::new(status));
    let ids = Arc::new(Mutex::new(Vec::new()));
    let (answer_in, ids_in) = (answer.clone(), ids.clone());
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { continue };
            let mut reader = BufReader::new(stream.try_clone().unwrap());
            let (mut length, mut id) = (0, String::new());
            loop {
                let mut line = String::new();
                if reader.read_line(&mut line).unwrap_or(0) == 0 || line == "\r\n" {
                    break;
                }
                let lower = line.to_ascii_lowercase();
                if let Some(v) = lower.strip_prefix("content-length:") {
                    length = v.trim().parse().unwrap_or(0);
                }
                if lower.starts_with("webhook-id:") {
                    id = line["webhook-id:".len()..].trim().to_owned();
                }
            }
            let mut body = vec![0; length];
            let _ = reader.read_exact(&mut body);
            ids_in.lock().unwrap().push(id);
            let status = answer_in.load(Ordering::SeqCst);
            let _ = write!(
                stream,
                "HTTP/1.1 {status} X\r\ncontent-length: 0\r\nconnection: close\r\n\r\n"
            );
        }
    });
    Endpoint {
        url,
        status: answer,
        ids,
    }
}

#[test]
fn a_dead_letter_is_listed_and_sent_again_once_the_endpoint_works() {
    let s = setup();
    let hook = endpoint(500);
    let created = s
        .run(&[
            "webhook",
            "create",
            &hook.url,
            "--type",
            "create-namespace",
            "--max-attempts",
            "1",
        ])
        .success();
    let id = created
        .stdout
        .strip_prefix("Created webhook ")
        .and_then(|rest| rest.split('.').next())
        .unwrap()
        .to_owned();
    assert!(
        created
            .stdout
            .contains("Signing secret (shown only now): whsec_"),
        "{created:?}"
    );
    s.create_namespace("default", "lost");

    let deadline = Instant::now() + Duration::from_secs(60);
    let letters = loop {
        let listed = s
            .run(&["webhook", "dead-letters", &id, "--json"])
            .success()
            .json();
        if let Some(letters) = listed["dead-letters"].as_array().filter(|l| !l.is_empty()) {
            break letters.clone();
        }
        assert!(Instant::now() < deadline, "no dead letter: {listed}");
        std::thread::sleep(Duration::from_millis(200));
    };
    let event = letters[0]["event"].as_str().unwrap().to_owned();
    let table = s.run(&["webhook", "dead-letters", &id]).success();
    assert!(table.stdout.contains("create-namespace"), "{table:?}");
    let attempts = s.run(&["webhook", "attempts", &id]).success();
    assert!(attempts.stdout.contains("dead-lettered"), "{attempts:?}");

    let refused = s.run(&["webhook", "redeliver", &id, &event]).fails_with(1);
    assert!(refused.stderr.contains("was not delivered"), "{refused:?}");
    hook.status.store(204, Ordering::SeqCst);
    let sent = s.run(&["webhook", "redeliver", &id, &event]).success();
    assert!(
        sent.stdout.starts_with(&format!("Delivered event {event}")),
        "{sent:?}"
    );
    assert_eq!(hook.ids.lock().unwrap().last().unwrap(), &event);
    let none = s.run(&["webhook", "dead-letters", &id]).success();
    assert_eq!(none.stdout, "No dead letters.\n");

    let listed = s.run(&["webhook"]).success();
    assert!(
        listed.stdout.contains(&id) && listed.stdout.contains(&hook.url),
        "{listed:?}"
    );
    s.run(&["webhook", "disable", &id]).success();
    let shown = s.run(&["webhook", "show", &id]).success();
    assert!(shown.stdout.contains("enabled      false"), "{shown:?}");
    let deleted = s.run(&["webhook", "delete", &id]).success();
    assert_eq!(deleted.stdout, format!("Deleted webhook {id}.\n"));
    s.run(&["webhook", "show", &id]).fails_with(3);
    assert_eq!(s.run(&["webhook"]).success().stdout, "No webhooks.\n");
}
