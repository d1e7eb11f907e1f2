//! Request shaping of a page (`OpenOptions::shape`): the emulation set
//! once when the page opens (user agent, locale and `Accept-Language`,
//! timezone, viewport, mobile), the cookies set before each navigation,
//! and the headers and credentials the interceptor adds for one host.
//! These DevTools overrides are not undone by the pool's reset, so a
//! shaped page's context is never handed to another job: shaping taints
//! the tab.

use std::sync::Arc;

use oxwright_engine::{EngineError, EngineErrorKind};
use oxwright_jobs::{RequestShape, Viewport};
use serde_json::json;

use super::raw;
use crate::{BrowserError, HostHeaders, Tab};

/// Maps a refused override onto a typed `invalid_input` naming the option.
fn refused(option: &str, value: &str, err: BrowserError) -> EngineError {
    match err {
        BrowserError::Protocol { message, .. } => EngineError::new(
            EngineErrorKind::InvalidInput,
            format!("{option} {value:?} was refused by the browser: {message}"),
        ),
        other => other.into(),
    }
}

/// Turns the browser's user agent into the one of a phone.
fn mobile_user_agent(desktop: &str) -> String {
    let ua = match (desktop.find('('), desktop.find(')')) {
        (Some(a), Some(b)) if a < b => format!(
            "{}(Linux; Android 14; Pixel 8){}",
            &desktop[..a],
            &desktop[b + 1..]
        ),
        _ => desktop.to_string(),
    };
    if ua.contains("Mobile") {
        ua
    } else {
        ua.replace("Safari/", "Mobile Safari/")
    }
}

/// `de-DE` becomes `de-DE,de;q=0.9`; anything else goes as given.
fn accept_language(locale: &str) -> String {
    match locale.split_once(['-', '_']) {
        Some((lang, _)) if !locale.contains(',') => format!("{locale},{lang};q=0.9"),
        _ => locale.to_string(),
    }
}

/// Applies the page-level parts of `shape` to the freshly opened page.
pub(crate) async fn emulate(tab: &Tab, shape: &RequestShape) -> Result<(), EngineError> {
    tab.taint();
    if let Some(tz) = &shape.timezone {
        raw::call(tab, "Emulation.setTimezoneOverride", json!({ "timezoneId": tz }))
            .await
            .map_err(|e| refused("timezone", tz, e))?;
    }
    if let Some(locale) = &shape.locale {
        raw::call(tab, "Emulation.setLocaleOverride", json!({ "locale": locale }))
            .await
            .map_err(|e| refused("locale", locale, e))?;
    }
    if shape.user_agent.is_some() || shape.locale.is_some() || shape.mobile {
        let ua = match &shape.user_agent {
            Some(ua) => ua.clone(),
            None => {
                let current = tab
                    .evaluate("navigator.userAgent", tab.call_timeout())
                    .await?
                    .as_str()
                    .unwrap_or_default()
                    .to_string();
                if shape.mobile {
                    mobile_user_agent(&current)
                } else {
                    current
                }
            }
        };
        let mut params = json!({ "userAgent": ua });
        if let Some(locale) = &shape.locale {
            params["acceptLanguage"] = json!(accept_language(locale));
        }
        raw::call(tab, "Emulation.setUserAgentOverride", params)
            .await
            .map_err(|e| refused("user_agent", &ua, e))?;
    }
    let viewport = shape.viewport.or(shape.mobile.then_some(Viewport::MOBILE));
    if let Some(v) = viewport {
        raw::call(
            tab,
            "Emulation.setDeviceMetricsOverride",
            json!({
                "width": v.width,
                "height": v.height,
                "deviceScaleFactor": if shape.mobile { 2 } else { 0 },
                "mobile": shape.mobile,
            }),
        )
        .await?;
    }
    if shape.mobile {
        raw::call(
            tab,
            "Emulation.setTouchEmulationEnabled",
            json!({ "enabled": true, "maxTouchPoints": 5 }),
        )
        .await?;
    }
    Ok(())
}

/// Sets `shape`'s cookies before a navigation to `url`: a cookie without a
/// domain belongs to `url`'s host only, with path `/` unless given.
pub(crate) async fn set_cookies(tab: &Tab, url: &url::Url, shape: &RequestShape) -> Result<(), EngineError> {
    if shape.cookies.is_empty() {
        return Ok(());
    }
    tab.taint();
    let cookies: Vec<serde_json::Value> = shape
        .cookies
        .iter()
        .map(|c| {
            let mut cookie = json!({
                "name": c.name,
                "value": c.value,
                "path": c.path.clone().unwrap_or_else(|| "/".into()),
            });
            match &c.domain {
                Some(domain) => cookie["domain"] = json!(domain),
                None => cookie["url"] = json!(url.as_str()),
            }
            if c.secure {
                cookie["secure"] = json!(true);
            }
            cookie
        })
        .collect();
    raw::call(tab, "Network.setCookies", json!({ "cookies": cookies }))
        .await
        .map_err(|e| refused("cookies", "", e))?;
    Ok(())
}

/// The headers and credentials of `shape` for a navigation to `url`.
pub(crate) fn host_headers(url: &url::Url, shape: &RequestShape) -> Option<Arc<HostHeaders>> {
    if shape.headers.is_empty() && shape.basic_auth.is_none() {
        return None;
    }
    let host = url.host_str().unwrap_or_default().to_ascii_lowercase();
    let auth = shape
        .basic_auth
        .as_ref()
        .map(|a| (a.authority(url), a.header_value()));
    Some(Arc::new(HostHeaders {
        host,
        headers: shape
            .headers
            .iter()
            .map(|(n, v)| (n.clone(), v.clone()))
            .collect(),
        auth,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn phone_user_agent() {
        let desktop = "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) HeadlessChrome/140.0.0.0 Safari/537.36";
        let ua = mobile_user_agent(desktop);
        assert!(ua.contains("(Linux; Android 14; Pixel 8)"), "{ua}");
        assert!(ua.ends_with("Mobile Safari/537.36"), "{ua}");
        assert_eq!(accept_language("de-DE"), "de-DE,de;q=0.9");
        assert_eq!(accept_language("fr"), "fr");
    }

    #[test]
    fn credentials_default_to_the_fetched_origin() {
        let shape = RequestShape {
            basic_auth: Some(oxwright_jobs::BasicAuth {
                username: "u".into(),
                password: "p".into(),
                host: None,
            }),
            ..RequestShape::default()
        };
        let h = host_headers(&"http://Example.test:8080/a".parse().unwrap(), &shape).unwrap();
        assert_eq!(h.auth.as_ref().unwrap().0, "example.test:8080");
        assert_eq!(h.auth.as_ref().unwrap().1, "Basic dTpw");
        let h = host_headers(&"https://example.test/a".parse().unwrap(), &shape).unwrap();
        assert_eq!(h.auth.as_ref().unwrap().0, "example.test:443");
    }
}
