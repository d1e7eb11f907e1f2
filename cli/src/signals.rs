//! Process signals: the shutdown token every long-running command uses.

use tokio_util::sync::CancellationToken;

/// Returns a token cancelled on the first SIGINT or SIGTERM; a second
/// signal exits at once (the browsers die with the process).
pub fn shutdown_on_signals() -> CancellationToken {
    let token = CancellationToken::new();
    let trigger = token.clone();
    tokio::spawn(async move {
        let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()).ok();
        next_signal(&mut term).await;
        const STOPPING: &str = "stopping: finishing the pages in flight (Ctrl-C again to stop now)";
        if oxwright_telemetry::console::is_quiet() {
            oxwright_telemetry::console::say(STOPPING);
        } else {
            tracing::info!("{STOPPING}");
        }
        trigger.cancel();
        next_signal(&mut term).await;
        std::process::exit(130);
    });
    token
}

async fn next_signal(term: &mut Option<tokio::signal::unix::Signal>) {
    match term.as_mut() {
        Some(t) => tokio::select! {
            _ = tokio::signal::ctrl_c() => {}
            _ = t.recv() => {}
        },
        None => {
            let _ = tokio::signal::ctrl_c().await;
        }
    }
}
