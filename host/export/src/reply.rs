//! What a receiver answered a push, judged: a 2xx is delivered; anything else is a failure said
//! on one line. A redirect is named and never followed (following one sent the body, and an
//! InfluxDB `p=` password in the `Referer`, to whatever host the receiver named). An error's body
//! is read only up to [`ERROR_BODY_CAP`] bytes and for at most [`ERROR_BODY_TIME`]: a receiver
//! answering 500 with an endless body was read whole (4.1 GiB, then the OOM killer).

use std::time::Duration;

use loadhost_input::Prefix;

/// The most of an error's body read: enough for any receiver's message. Past it the response
/// is dropped, which closes its connection.
pub const ERROR_BODY_CAP: usize = 4 * 1024;

/// The longest an error's body is read for: the status already says the push failed, and a
/// body trickled byte by byte must not hold up the retries.
pub const ERROR_BODY_TIME: Duration = Duration::from_secs(2);

/// The characters of an error's body shown in the error: it ends up on one line of the summary.
const SHOWN: usize = 200;

/// Read at most [`ERROR_BODY_CAP`] bytes of `response`'s body, for at most [`ERROR_BODY_TIME`],
/// then drop it (an unread rest closes the connection instead of being drained).
pub async fn error_body(mut response: reqwest::Response) -> Prefix {
    let mut body = Prefix::new(ERROR_BODY_CAP);
    let read = async {
        // A read error ends the body early: what came before it is still the message.
        while let Ok(Some(chunk)) = response.chunk().await {
            if body.push(&chunk).is_break() {
                break;
            }
        }
    };
    // Out of time: what was read so far is the message.
    let _ = tokio::time::timeout(ERROR_BODY_TIME, read).await;
    body
}

/// `text` as one line for the summary: control characters (newlines too) as spaces, runs of
/// spaces as one, at most [`SHOWN`] characters (then `…`).
pub fn one_line(text: &str) -> String {
    match loadhost_input::one_line(text, SHOWN) {
        (line, true) => format!("{line}…"),
        (line, false) => line,
    }
}

/// The failure a redirect is: named, with where it pointed (`Location`, on one line).
pub fn redirect(status: reqwest::StatusCode, location: Option<&str>) -> String {
    let to = location.map_or_else(|| "no Location".to_owned(), |l| format!("Location {}", one_line(l)));
    format!("answered {} (a redirect, not followed: {to})", status.as_u16())
}

/// The failure an error status is, with the start of its body.
pub fn error(status: reqwest::StatusCode, body: &Prefix) -> String {
    let text = one_line(&String::from_utf8_lossy(body.bytes()));
    let more = if body.over() { " …" } else { "" };
    if text.is_empty() { format!("HTTP {status}") } else { format!("HTTP {status}: {text}{more}") }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    #[test]
    fn a_hostile_body_becomes_one_short_line() {
        assert_eq!(one_line("  bad\r\nrequest\t\u{1b}[31m \n"), "bad request [31m");
        let long = "x".repeat(5000);
        assert_eq!(one_line(&long).chars().count(), SHOWN + 1);
        assert_eq!(one_line(""), "");
    }

    #[test]
    fn a_redirect_is_a_failure_that_names_itself_and_where_it_pointed() {
        let status = reqwest::StatusCode::TEMPORARY_REDIRECT;
        assert_eq!(
            redirect(status, Some("http://elsewhere:1/x\r\n")),
            "answered 307 (a redirect, not followed: Location http://elsewhere:1/x)"
        );
        assert_eq!(redirect(status, None), "answered 307 (a redirect, not followed: no Location)");
    }

    /// A chunk size drawn from the edges the cap has (0, cap−1, cap, cap+1) and from anywhere,
    /// a huge one included.
    fn chunk_len(cap: usize) -> impl Strategy<Value = usize> {
        prop_oneof![
            Just(0),
            Just(1),
            Just(cap.saturating_sub(1)),
            Just(cap),
            Just(cap + 1),
            0..(3 * cap),
            Just(4 << 20),
        ]
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(400))]

        /// Fed any chunking of any size, the reader keeps exactly min(total, cap) bytes, in order,
        /// stops asking once it has the cap, and says "over" only when bytes past it came.
        #[test]
        fn the_error_body_reader_keeps_exactly_up_to_its_cap(
            cap in prop_oneof![Just(1usize), Just(ERROR_BODY_CAP), 1usize..10_000],
            lens in proptest::collection::vec(chunk_len(ERROR_BODY_CAP), 0..40),
        ) {
            let mut body = Prefix::new(cap);
            let (mut fed, mut asked) = (0usize, 0usize);
            for len in &lens {
                // The bytes' values say where they came from, so the order is checked too. A
                // huge chunk is only made when the reader asks for it (it stops before).
                let chunk: Vec<u8> = (fed..fed + len).map(|i| (i % 251) as u8).collect();
                asked += 1;
                fed += len;
                if body.push(&chunk).is_break() {
                    break;
                }
            }
            let kept = fed.min(cap);
            prop_assert_eq!(body.bytes().len(), kept);
            prop_assert!(body.bytes().iter().enumerate().all(|(i, b)| *b == (i % 251) as u8));
            prop_assert_eq!(body.over(), fed > cap);
            // Once full, nothing more is read: the chunk that filled it was the last asked for.
            let before_last: usize = lens[..asked.saturating_sub(1)].iter().sum();
            prop_assert!(before_last < cap || asked == 0, "read on after the cap");
            prop_assert!(error(reqwest::StatusCode::INTERNAL_SERVER_ERROR, &body).chars().count() <= SHOWN + 40);
        }
    }
}
