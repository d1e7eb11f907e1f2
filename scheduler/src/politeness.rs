//! Per-host politeness where jobs are released (a crawl's, a batch's):
//! at most `concurrency` page loads in flight at one host and at least
//! its delay between their starts. Hosts wait in a queue ordered by when each may start its next
//! page, so a release costs a logarithm of the hosts with work, whatever
//! their number, and a host that must wait holds up no other.

use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap, VecDeque};
use std::time::Duration;

use tokio::time::Instant;
use url::Url;

/// The longest a host's delay grows when it keeps answering 429, 503 or
/// not in time.
pub const MAX_BACKOFF: Duration = Duration::from_secs(60);

/// Says whether a page's report says its host is overloaded or slow: a
/// 429 or 503, or a timeout. Such a host backs off.
pub fn slow_answer(report: &oxwright_jobs::JobReport) -> bool {
    report
        .error
        .as_ref()
        .is_some_and(|e| matches!(e.status, Some(429 | 503)) || e.kind == oxwright_jobs::ErrorKind::Timeout)
}

/// Asks `robots` whether a job may load `url`: a `policy_denied` error
/// when robots.txt disallows it (or cannot be asked); the host's
/// `Crawl-delay` is applied to `hosts` either way.
pub async fn robots_allow<T>(
    robots: &oxwright_robots::RobotsCache,
    hosts: &mut Hosts<T>,
    url: &Url,
) -> Result<(), oxwright_jobs::JobError> {
    let refuse = |why: String| {
        Err(
            oxwright_jobs::JobError::new(oxwright_jobs::ErrorKind::PolicyDenied, why)
                .with_url(url.to_string()),
        )
    };
    match robots.robots_for(url).await {
        Ok(rules) => {
            if let Some(delay) = rules.crawl_delay() {
                hosts.set_crawl_delay(&host_key(url), delay, Instant::now());
            }
            if rules.allowed(url) {
                Ok(())
            } else {
                refuse(format!(
                    "robots.txt disallows it for the token {:?}",
                    robots.config().user_agent
                ))
            }
        }
        Err(err) => refuse(format!("robots.txt could not be asked: {err}")),
    }
}

/// The key politeness counts by: host and port (`example.com:443`).
pub fn host_key(url: &Url) -> String {
    format!(
        "{}:{}",
        url.host_str().unwrap_or_default().to_ascii_lowercase(),
        url.port_or_known_default().unwrap_or(0)
    )
}

#[derive(Debug)]
struct Host<T> {
    waiting: VecDeque<T>,
    in_flight: usize,
    /// Pages in flight at most (1 once the host names a `Crawl-delay`).
    concurrency: usize,
    /// The configured delay, or the host's `Crawl-delay` when longer.
    delay: Duration,
    /// The delay after backing off (at least `delay`).
    current: Duration,
    /// When its next page may start.
    next_start: Instant,
    /// Whether it stands in the ready queue.
    queued: bool,
}

/// Items waiting per host, released politely. `T` is what a release hands
/// back (a URL and where it was found).
#[derive(Debug)]
pub struct Hosts<T> {
    concurrency: usize,
    delay: Duration,
    hosts: HashMap<String, Host<T>>,
    /// Hosts with an item waiting and a free slot, by when they may start.
    ready: BinaryHeap<Reverse<(Instant, u64, String)>>,
    seq: u64,
    waiting: usize,
    in_flight: usize,
}

impl<T> Hosts<T> {
    /// At most `concurrency` (at least 1) in flight per host, `delay` between starts.
    pub fn new(concurrency: usize, delay: Duration) -> Self {
        Self {
            concurrency: concurrency.max(1),
            delay,
            hosts: HashMap::new(),
            ready: BinaryHeap::new(),
            seq: 0,
            waiting: 0,
            in_flight: 0,
        }
    }

    /// Items waiting, at every host.
    pub fn waiting(&self) -> usize {
        self.waiting
    }

    /// Items released and not yet finished, at every host.
    pub fn in_flight(&self) -> usize {
        self.in_flight
    }

    fn host(&mut self, key: &str, now: Instant) -> &mut Host<T> {
        let (delay, concurrency) = (self.delay, self.concurrency);
        self.hosts.entry(key.to_owned()).or_insert_with(|| Host {
            waiting: VecDeque::new(),
            in_flight: 0,
            concurrency,
            delay,
            current: delay,
            next_start: now,
            queued: false,
        })
    }

    /// Applies `key`'s robots.txt `Crawl-delay`: the host takes one page
    /// at a time, and its delay is `crawl_delay` when that is longer than
    /// the configured one.
    pub fn set_crawl_delay(&mut self, key: &str, crawl_delay: Duration, now: Instant) {
        let host = self.host(key, now);
        host.concurrency = 1;
        if crawl_delay > host.delay {
            host.delay = crawl_delay;
            host.current = host.current.max(crawl_delay);
        }
    }

    /// Puts `item` in `key`'s queue.
    pub fn push(&mut self, key: &str, item: T, now: Instant) {
        self.host(key, now).waiting.push_back(item);
        self.waiting += 1;
        self.schedule(key);
    }

    /// Puts `key` in the ready queue if it has an item and a free slot.
    fn schedule(&mut self, key: &str) {
        let Some(host) = self.hosts.get_mut(key) else {
            return;
        };
        if host.queued || host.waiting.is_empty() || host.in_flight >= host.concurrency {
            return;
        }
        host.queued = true;
        self.seq += 1;
        self.ready
            .push(Reverse((host.next_start, self.seq, key.to_owned())));
    }

    /// When the next item may be released (`None`: nothing waits, or
    /// every host with work is at its limit).
    pub fn next_release(&self) -> Option<Instant> {
        self.ready.peek().map(|Reverse((at, _, _))| *at)
    }

    /// Releases the next item whose host may start a page at `now`, with its host key.
    pub fn release(&mut self, now: Instant) -> Option<(String, T)> {
        loop {
            let Reverse((at, _, _)) = self.ready.peek()?;
            if *at > now {
                return None;
            }
            let Reverse((_, _, key)) = self.ready.pop().expect("peeked");
            let host = self.hosts.get_mut(&key).expect("a ready host is known");
            host.queued = false;
            // Slowed down, or filled, since it was queued: queued again
            // for when it may start (or when a page of it ends).
            if host.next_start > now || host.in_flight >= host.concurrency {
                self.schedule(&key);
                continue;
            }
            let item = host.waiting.pop_front().expect("a ready host has an item");
            host.in_flight += 1;
            host.next_start = now + host.current;
            self.waiting -= 1;
            self.in_flight += 1;
            self.schedule(&key);
            return Some((key, item));
        }
    }

    /// Counts a page at `key` in flight that was released before this
    /// gate existed (by a scheduler before a restart).
    pub fn occupy(&mut self, key: &str, now: Instant) {
        let host = self.host(key, now);
        host.in_flight += 1;
        host.next_start = now + host.current;
        self.in_flight += 1;
    }

    /// Notes that a page at `key` ended: `slow` when the host answered
    /// 429, 503 or not in time, which doubles its delay (up to
    /// [`MAX_BACKOFF`]); a good answer halves it back towards the
    /// configured one. A host that takes one page at a time also waits its
    /// delay after each page's end, so the delay holds at the host however
    /// long a job waited in the queue before it started.
    pub fn finished(&mut self, key: &str, slow: bool, now: Instant) {
        let Some(host) = self.hosts.get_mut(key) else {
            return;
        };
        if host.in_flight == 0 {
            return;
        }
        host.in_flight -= 1;
        self.in_flight -= 1;
        if slow {
            host.current = (host.current * 2)
                .max(Duration::from_secs(1))
                .min(MAX_BACKOFF)
                .max(host.delay);
            host.next_start = host.next_start.max(now + host.current);
        } else if host.current > host.delay {
            host.current = (host.current / 2).max(host.delay);
        }
        if host.concurrency == 1 {
            host.next_start = host.next_start.max(now + host.current);
        }
        self.schedule(key);
    }

    /// Notes that the page `report` is about ended at `key`, as
    /// [`Self::finished`] does; a `Retry-After` it carries (with a 429 or
    /// 503) also keeps the host from starting another page until then.
    pub fn answered(&mut self, key: &str, report: &oxwright_jobs::JobReport, now: Instant) {
        self.finished(key, slow_answer(report), now);
        let wait = report.error.as_ref().and_then(|e| e.retry_after_s);
        if let (Some(secs), Some(host)) = (wait, self.hosts.get_mut(key)) {
            host.next_start = host.next_start.max(now + Duration::from_secs(secs));
        }
    }

    /// Takes every item still waiting, host by host.
    pub fn drain(&mut self) -> Vec<T> {
        self.ready.clear();
        self.waiting = 0;
        self.hosts
            .values_mut()
            .flat_map(|h| {
                h.queued = false;
                std::mem::take(&mut h.waiting)
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_host_never_has_more_than_its_limit_in_flight() {
        let now = Instant::now();
        let mut hosts = Hosts::new(2, Duration::ZERO);
        for i in 0..5 {
            hosts.push("a:80", i, now);
        }
        hosts.push("b:80", 100, now);
        let mut released = Vec::new();
        while let Some((key, item)) = hosts.release(now) {
            released.push((key, item));
        }
        assert_eq!(released.len(), 3, "{released:?}");
        assert_eq!(released.iter().filter(|(k, _)| k == "a:80").count(), 2);
        assert_eq!(hosts.next_release(), None);
        hosts.finished("a:80", false, now);
        assert_eq!(hosts.release(now), Some(("a:80".into(), 2)));
        assert_eq!(hosts.waiting(), 2);
        assert_eq!(hosts.in_flight(), 3);
    }

    #[test]
    fn starts_at_one_host_are_spaced_by_its_delay_and_others_go_meanwhile() {
        let t0 = Instant::now();
        let mut hosts = Hosts::new(8, Duration::from_millis(500));
        for i in 0..3 {
            hosts.push("slow:80", i, t0);
        }
        hosts.push("other:80", 9, t0);
        assert!(hosts.release(t0).is_some());
        assert!(hosts.release(t0).is_some());
        assert_eq!(hosts.release(t0), None, "the slow host waits its delay");
        assert_eq!(hosts.next_release(), Some(t0 + Duration::from_millis(500)));
        assert_eq!(hosts.release(t0 + Duration::from_millis(499)), None);
        assert_eq!(
            hosts.release(t0 + Duration::from_millis(500)),
            Some(("slow:80".into(), 1))
        );
    }

    #[test]
    fn one_page_at_a_time_waits_the_delay_after_each_end() {
        let t0 = Instant::now();
        let mut hosts = Hosts::new(1, Duration::from_millis(500));
        hosts.push("h:80", 1, t0);
        hosts.push("h:80", 2, t0);
        assert!(hosts.release(t0).is_some());
        // The page took 2 s (it waited in the queue, or the host was slow).
        let end = t0 + Duration::from_secs(2);
        hosts.finished("h:80", false, end);
        assert_eq!(hosts.next_release(), Some(end + Duration::from_millis(500)));
    }

    #[test]
    fn a_crawl_delay_means_one_page_at_a_time() {
        let t0 = Instant::now();
        let mut hosts = Hosts::new(4, Duration::ZERO);
        hosts.set_crawl_delay("h:80", Duration::from_millis(100), t0);
        for i in 0..3 {
            hosts.push("h:80", i, t0);
        }
        assert!(hosts.release(t0).is_some());
        assert_eq!(hosts.release(t0 + Duration::from_secs(1)), None);
        assert_eq!(hosts.in_flight(), 1);
    }

    #[test]
    fn crawl_delay_wins_when_longer_and_slow_answers_back_off() {
        let t0 = Instant::now();
        let mut hosts = Hosts::new(1, Duration::from_millis(100));
        hosts.set_crawl_delay("h:80", Duration::from_secs(2), t0);
        hosts.set_crawl_delay("h:80", Duration::from_millis(10), t0);
        for i in 0..3 {
            hosts.push("h:80", i, t0);
        }
        assert!(hosts.release(t0).is_some());
        hosts.finished("h:80", false, t0);
        assert_eq!(hosts.next_release(), Some(t0 + Duration::from_secs(2)));
        let t1 = t0 + Duration::from_secs(2);
        assert!(hosts.release(t1).is_some());
        hosts.finished("h:80", true, t1);
        assert_eq!(hosts.next_release(), Some(t1 + Duration::from_secs(4)));
    }

    #[test]
    fn a_retry_after_holds_its_host_alone_until_then() {
        let t0 = Instant::now();
        let mut hosts = Hosts::new(2, Duration::ZERO);
        for i in 0..4 {
            hosts.push("busy:443", i, t0);
        }
        hosts.push("calm:443", 9, t0);
        let first = hosts.release(t0).unwrap();
        assert_eq!(first.0, "busy:443");
        let error = oxwright_jobs::JobError::new(oxwright_jobs::ErrorKind::HttpStatus, "HTTP 429")
            .with_status(429)
            .with_retry_after(30);
        let report =
            crate::batch::input::failed_report(oxwright_jobs::JobId::new(), "b", "https://busy/", error);
        hosts.answered("busy:443", &report, t0);
        // The host was queued before the answer: it is not released early.
        let mut now_released = Vec::new();
        while let Some((key, _)) = hosts.release(t0) {
            now_released.push(key);
        }
        assert_eq!(now_released, ["calm:443"], "only the other host goes on");
        assert_eq!(hosts.release(t0 + Duration::from_secs(29)), None);
        assert_eq!(
            hosts.release(t0 + Duration::from_secs(30)).map(|(k, _)| k),
            Some("busy:443".into())
        );
    }
}
