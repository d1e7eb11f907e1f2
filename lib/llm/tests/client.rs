//! The chat-completions client against the scripted LLM server over real
//! HTTP: retries on 429 and 5xx with backoff, no retry on 4xx, usage, the
//! API key header, and typed configuration errors.

use std::collections::BTreeMap;

use oxwright_fixtures::llm::{Reply, ScriptedLlm};
use oxwright_llm::{LlmClient, LlmConfig, LlmError, Message, ModelConfig};

fn client(llm: &ScriptedLlm, env: &BTreeMap<String, String>, key_env: Option<&str>) -> LlmClient {
    let mut cfg = LlmConfig::new(llm.base_url(), "small-model");
    cfg.backoff_ms = 5;
    cfg.retries = 2;
    cfg.model.api_key_env = key_env.map(str::to_owned);
    LlmClient::new(cfg, env).expect("client builds")
}

#[tokio::test]
async fn retries_429_and_5xx_then_answers_with_usage() {
    let llm = ScriptedLlm::start().await.unwrap();
    llm.push(Reply::Status(429, "slow down".into()));
    llm.push(Reply::Status(503, "busy".into()));
    llm.push(Reply::text("{\"ok\": true}"));
    let env = BTreeMap::from([("MY_KEY".to_string(), "k-123".to_string())]);
    let c = client(&llm, &env, Some("MY_KEY"));
    let out = c
        .chat(&[Message::user("hello there")], 50)
        .await
        .expect("answer after retries");
    assert_eq!(out.text, "{\"ok\": true}");
    assert_eq!(out.usage.attempts, 3);
    assert!(out.usage.prompt_tokens > 0 && out.usage.completion_tokens > 0);
    assert!(!out.usage.estimated);
    assert!(out.usage.latency_ms > 0.0);
    let calls = llm.received();
    assert_eq!(calls.len(), 3);
    let body = calls[2].json();
    assert_eq!(body["model"], "small-model");
    assert_eq!(body["max_tokens"], 50);
    assert_eq!(body["messages"][0]["content"], "hello there");
    let auth = calls[2]
        .headers
        .iter()
        .find(|(k, _)| k == "authorization")
        .map(|(_, v)| v.clone());
    assert_eq!(auth.as_deref(), Some("Bearer k-123"));
}

#[tokio::test]
async fn gives_up_after_the_retries_and_never_retries_4xx() {
    let llm = ScriptedLlm::start().await.unwrap();
    for _ in 0..3 {
        llm.push(Reply::Status(500, "down".into()));
    }
    let c = client(&llm, &BTreeMap::new(), None);
    let err = c.chat(&[Message::user("x")], 10).await.unwrap_err();
    assert!(matches!(err, LlmError::Status { status: 500, .. }), "{err}");
    assert!(err.is_retryable());
    assert_eq!(llm.received().len(), 3);

    llm.push(Reply::Status(401, "bad key".into()));
    let err = c.chat(&[Message::user("x")], 10).await.unwrap_err();
    assert!(matches!(err, LlmError::Status { status: 401, .. }), "{err}");
    assert_eq!(llm.received().len(), 4, "a 401 is not retried");

    llm.push(Reply::RawBody("<html>proxy error</html>".into()));
    let err = c.chat(&[Message::user("x")], 10).await.unwrap_err();
    assert!(matches!(err, LlmError::BadAnswer(_)), "{err}");
}

#[tokio::test]
async fn configuration_errors_are_typed() {
    let mut cfg = LlmConfig::new("ftp://nowhere", "m");
    assert!(matches!(
        LlmClient::new(cfg.clone(), &BTreeMap::new()),
        Err(LlmError::Config(_))
    ));
    cfg.model = ModelConfig {
        base_url: "http://127.0.0.1:9/v1".into(),
        model: "m".into(),
        api_key_env: Some("UNSET_KEY_VAR".into()),
    };
    let err = LlmClient::new(cfg, &BTreeMap::new()).unwrap_err();
    assert!(err.to_string().contains("UNSET_KEY_VAR"), "{err}");

    // An unreachable endpoint is a retryable transport error.
    let mut cfg = LlmConfig::new(format!("http://{}/v1", closed_port()), "m");
    cfg.retries = 0;
    let err = LlmClient::new(cfg, &BTreeMap::new())
        .unwrap()
        .chat(&[Message::user("x")], 5)
        .await
        .unwrap_err();
    assert!(matches!(err, LlmError::Transport(_)), "{err}");
    assert!(err.is_retryable());
}

#[tokio::test]
async fn large_model_falls_back_to_the_small_one() {
    let llm = ScriptedLlm::start().await.unwrap();
    llm.push(Reply::text("a"));
    llm.push(Reply::text("b"));
    let mut cfg = LlmConfig::new(llm.base_url(), "small");
    cfg.large_model = Some(ModelConfig {
        base_url: llm.base_url(),
        model: "large".into(),
        api_key_env: None,
    });
    let c = LlmClient::new(cfg, &BTreeMap::new()).unwrap();
    c.chat_large(&[Message::user("x")], 5).await.unwrap();
    c.chat(&[Message::user("x")], 5).await.unwrap();
    let calls = llm.received();
    assert_eq!(calls[0].json()["model"], "large");
    assert_eq!(calls[1].json()["model"], "small");
}

fn closed_port() -> String {
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = l.local_addr().unwrap();
    drop(l);
    addr.to_string()
}
