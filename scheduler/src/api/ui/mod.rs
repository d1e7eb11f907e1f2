//! The dashboard at `/ui`: batches with live progress and their jobs, a
//! job's Markdown and artefacts, workflow sessions, schedules and queues.
//!
//! Server-rendered HTML with one small script (`assets/app.js`) for the
//! live counts; no asset from anywhere else. Behind the API's token (see
//! [`auth`]), every action carries a CSRF token, everything that came from
//! a page, a URL or the store is escaped, Markdown is rendered with raw
//! HTML as text, and every answer carries a strict Content-Security-Policy.
//! Stored artefacts are served sandboxed (no script runs in them).

mod auth;
mod batches;
mod checks;
mod files;
mod html;
mod jobs;
mod markdown;
mod queues;
mod sessions;
mod workflows;

use std::collections::HashMap;
use std::sync::Arc;

use axum::Router;
use axum::extract::State;
use axum::http::{HeaderMap, HeaderValue, Method, StatusCode, header};
use axum::response::{Html, IntoResponse, Redirect, Response};
use axum::routing::{get, post};
use bytes::Bytes;

use auth::Refusal;
pub(crate) use auth::UiAuth;

use super::state::AppState;

/// The policy of every dashboard page.
const PAGE_CSP: &str = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; \
                        connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'";

/// Built into the binary: the dashboard needs nothing from a network.
const APP_JS: &str = include_str!("assets/app.js");
const APP_CSS: &str = include_str!("assets/app.css");

/// The `/ui` routes.
pub(crate) fn router(state: Arc<AppState>) -> Router<Arc<AppState>> {
    Router::new()
        .route("/ui", get(batches::list))
        .route("/ui/", get(|| async { Redirect::to("/ui") }))
        // The address the dashboard prints, and the one a person types.
        .route("/", get(|| async { Redirect::to("/ui") }))
        .route("/ui/login", get(login_form).post(login))
        .route("/ui/logout", post(logout))
        .route(
            "/ui/assets/app.js",
            get(|| async { asset("text/javascript; charset=utf-8", APP_JS) }),
        )
        .route(
            "/ui/assets/app.css",
            get(|| async { asset("text/css; charset=utf-8", APP_CSS) }),
        )
        .route("/ui/progress", get(batches::progress))
        .route("/ui/batches/{id}", get(batches::show))
        .route("/ui/batches/{id}/rows", get(batches::rows))
        .route("/ui/batches/{id}/cancel", post(batches::cancel))
        .route("/ui/batches/{id}/resubmit", post(batches::resubmit))
        .route("/ui/jobs/{kind}/{id}", get(jobs::show))
        .route("/ui/checks", get(checks::list))
        .route("/ui/checks/{name}", get(checks::show))
        .route("/ui/sessions", get(sessions::list))
        .route("/ui/sessions/{id}", get(sessions::show))
        .route("/ui/workflows/{id}", get(workflows::show))
        .route("/ui/workflows/{id}/forget", post(workflows::forget))
        .route("/ui/files/{*key}", get(files::get))
        .route("/ui/queues", get(queues::show))
        .route("/ui/queues/redrive", post(queues::redrive))
        .route_layer(axum::middleware::from_fn_with_state(state, guard))
}

fn asset(content_type: &'static str, body: &'static str) -> Response {
    (
        [
            (header::CONTENT_TYPE, content_type),
            (header::CACHE_CONTROL, "public, max-age=300"),
        ],
        body,
    )
        .into_response()
}

/// Lets in what [`UiAuth`] allows, refuses cross-site actions, and puts
/// the security headers on every answer.
async fn guard(
    State(state): State<Arc<AppState>>,
    request: axum::extract::Request,
    next: axum::middleware::Next,
) -> Response {
    let path = request.uri().path();
    let open = path == "/ui/login" || path.starts_with("/ui/assets/");
    let refused = match state.ui.allows(request.headers()) {
        Ok(()) => None,
        Err(Refusal::Host) => Some(
            (
                StatusCode::FORBIDDEN,
                "the dashboard without a token answers loopback names only: open it as 127.0.0.1 or localhost",
            )
                .into_response(),
        ),
        Err(Refusal::Login) if !open => Some(login_page(StatusCode::UNAUTHORIZED, None)),
        Err(Refusal::Login) => None,
    };
    let mut response = match refused {
        Some(refused) => refused,
        None if request.method() == Method::POST && auth::cross_site(request.headers()) => {
            (StatusCode::FORBIDDEN, "cross-site request refused").into_response()
        }
        None => next.run(request).await,
    };
    let headers = response.headers_mut();
    if !headers.contains_key(header::CONTENT_SECURITY_POLICY) {
        headers.insert(
            header::CONTENT_SECURITY_POLICY,
            HeaderValue::from_static(PAGE_CSP),
        );
    }
    headers.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    headers.insert(header::REFERRER_POLICY, HeaderValue::from_static("no-referrer"));
    headers.insert(header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY"));
    headers
        .entry(header::CACHE_CONTROL)
        .or_insert(HeaderValue::from_static("no-store"));
    response
}

/// A dashboard page: the layout around `body`.
fn page(state: &AppState, title: &str, nav: html::Nav, body: &str) -> Response {
    let logout = state.ui.needs_login().then(|| state.ui.csrf());
    let page = html::Page {
        title,
        nav,
        logout_csrf: logout,
    };
    Html(html::layout(&page, body)).into_response()
}

/// An error page with `status`.
fn error_page(state: &AppState, status: StatusCode, message: &str) -> Response {
    let body = format!("<p class=\"error\">{}</p>", html::esc(message));
    let mut response = page(
        state,
        status.canonical_reason().unwrap_or("Error"),
        html::Nav::None,
        &body,
    );
    *response.status_mut() = status;
    response
}

impl super::error::ApiError {
    /// The error as a dashboard page.
    fn page(self, state: &AppState) -> Response {
        error_page(state, self.status, &format!("{}: {}", self.kind, self.message))
    }
}

fn login_page(status: StatusCode, problem: Option<&str>) -> Response {
    let problem = problem.map_or(String::new(), |p| {
        format!("<p class=\"error\">{}</p>", html::esc(p))
    });
    let body = format!(
        "{problem}<form method=\"post\" action=\"/ui/login\" class=\"login\">\
         <label for=\"token\">API token</label> \
         <input type=\"password\" id=\"token\" name=\"token\" autocomplete=\"current-password\" required autofocus>\
         <button>Log in</button></form>"
    );
    let page = html::Page {
        title: "Log in",
        nav: html::Nav::None,
        logout_csrf: None,
    };
    (status, Html(html::layout(&page, &body))).into_response()
}

async fn login_form(State(state): State<Arc<AppState>>, headers: HeaderMap) -> Response {
    if !state.ui.needs_login() || state.ui.allows(&headers).is_ok() {
        return Redirect::to("/ui").into_response();
    }
    login_page(StatusCode::OK, None)
}

async fn login(State(state): State<Arc<AppState>>, body: Bytes) -> Response {
    let form = form(&body);
    let given = form.get("token").map(String::as_str).unwrap_or("");
    match state.ui.login_cookie() {
        Some(cookie) if state.ui.token_ok(given) => {
            let mut response = Redirect::to("/ui").into_response();
            if let Ok(value) = HeaderValue::from_str(&cookie) {
                response.headers_mut().insert(header::SET_COOKIE, value);
            }
            response
        }
        Some(_) => login_page(StatusCode::UNAUTHORIZED, Some("wrong token")),
        None => Redirect::to("/ui").into_response(),
    }
}

async fn logout(State(state): State<Arc<AppState>>, body: Bytes) -> Response {
    if let Some(refused) = refusal(&state, &form(&body)) {
        return refused;
    }
    let mut response = Redirect::to("/ui/login").into_response();
    let expired = format!(
        "{}=; Path=/ui; HttpOnly; SameSite=Strict; Max-Age=0",
        auth::COOKIE
    );
    if let Ok(value) = HeaderValue::from_str(&expired) {
        response.headers_mut().insert(header::SET_COOKIE, value);
    }
    response
}

/// An `application/x-www-form-urlencoded` body's fields.
fn form(body: &[u8]) -> HashMap<String, String> {
    url::form_urlencoded::parse(body).into_owned().collect()
}

/// The refusal of an action without the CSRF token, and of every action
/// of a dashboard that only views; `None` lets it through.
fn refusal(state: &AppState, form: &HashMap<String, String>) -> Option<Response> {
    if state.opts.api.view_only {
        return Some(error_page(
            state,
            StatusCode::CONFLICT,
            "this dashboard only views the store: act from `oxwright scheduler`",
        ));
    }
    if state.ui.csrf_ok(form.get("csrf").map(String::as_str)) {
        None
    } else {
        Some(error_page(
            state,
            StatusCode::FORBIDDEN,
            "this action needs the form's CSRF token: reload the page and try again",
        ))
    }
}
