//! Engine errors as an agent reads them: what happened and what to do next.

use oxwright_engine::{EngineError, EngineErrorKind};

/// Says what went wrong and what the agent can do about it.
pub fn explain(err: &EngineError) -> String {
    let msg = &err.message;
    let url = err.url.as_deref().unwrap_or("");
    match err.kind {
        EngineErrorKind::Navigation if refused_connection(msg) => {
            let place = url::Url::parse(url)
                .ok()
                .map(|u| {
                    format!(
                        "{}:{}",
                        u.host_str().unwrap_or(""),
                        u.port_or_known_default().unwrap_or(0)
                    )
                })
                .unwrap_or_else(|| "that address".into());
            format!(
                "Could not connect: nothing is listening on {place} ({msg}). If it is your app, start it (and wait until it says it is listening), or check the port."
            )
        }
        EngineErrorKind::Navigation => {
            format!("The navigation failed: {msg}. Check the URL; the server may be down or unreachable.")
        }
        EngineErrorKind::Dns => {
            format!("The host name does not resolve: {msg}. Check the spelling of the host.")
        }
        EngineErrorKind::PolicyDenied => format!(
            "Refused by the URL policy: {msg}. This server only opens what its policy allows; whoever runs it can allow a host (--allow-host) if it should be reachable."
        ),
        EngineErrorKind::NotFound => {
            format!("{msg}. Call browser_snapshot and use a ref from it, or a selector that matches.")
        }
        EngineErrorKind::NotUnique => format!("{msg}."),
        EngineErrorKind::Stale => format!("{msg} (browser_snapshot), then use a ref from the new one."),
        EngineErrorKind::NotInteractable => {
            format!(
                "{msg}. The element may be hidden, disabled or covered: check browser_snapshot, or wait with browser_wait_for."
            )
        }
        EngineErrorKind::Timeout | EngineErrorKind::WaitForTimeout => format!(
            "Timed out: {msg}. The page may still be loading or the element never became ready; try browser_wait_for, or take a new snapshot."
        ),
        EngineErrorKind::HttpStatus => format!("The page answered with an HTTP error: {msg}."),
        EngineErrorKind::NonHtml => format!("{msg}. This is not an HTML page."),
        EngineErrorKind::Crashed => format!("The page crashed: {msg}."),
        EngineErrorKind::Unavailable | EngineErrorKind::Misconfigured => {
            format!("No browser is available: {msg}. The server's operator has to fix this.")
        }
        EngineErrorKind::Script => format!("The page script failed: {msg}"),
        EngineErrorKind::InvalidInput => format!("Bad input: {msg}"),
        EngineErrorKind::Unsupported | EngineErrorKind::Protocol => msg.clone(),
    }
}

fn refused_connection(msg: &str) -> bool {
    let m = msg.to_ascii_uppercase();
    m.contains("CONNECTION_REFUSED") || m.contains("CONNECTION REFUSED") || m.contains("ECONNREFUSED")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_closed_localhost_port_says_to_start_the_app() {
        let e = EngineError::new(EngineErrorKind::Navigation, "net::ERR_CONNECTION_REFUSED")
            .with_url("http://localhost:9999/");
        let s = explain(&e);
        assert!(s.contains("nothing is listening on localhost:9999"), "{s}");
        assert!(s.contains("start it"), "{s}");
    }

    #[test]
    fn stale_and_missing_targets_say_to_snapshot() {
        assert!(explain(&EngineError::stale("e5")).contains("browser_snapshot"));
        assert!(explain(&EngineError::not_found("css(#x)")).contains("browser_snapshot"));
    }
}
