//! The worker function: one warm browser pool per execution environment,
//! started by the first invocation and closed on the runtime's shutdown
//! signal; each message of an event goes through the consumer's own
//! [`handle_delivery`], so keys, reports and manifest lines are the ones
//! `oxwright worker` produces.

use std::sync::Arc;
use std::time::{Duration, SystemTime};

use futures::StreamExt as _;
use oxwright_artifacts::ArtifactStore;
use oxwright_config::Setup;
use oxwright_jobs::{ErrorKind, JobError, JobKind, JobReport};
use oxwright_queue::{AmqpNames, AmqpQueue, Delivery, JobQueue, MemoryQueue, Message};
use oxwright_worker::handlers::workflow::STOP_BY;
use oxwright_worker::{BrowserSetup, ConsumerOptions, HandlerContext, handle_delivery};
use serde_json::{Value, json};
use tokio::sync::OnceCell;
use tracing::Instrument as _;

use crate::FunctionError;
use crate::checks::{CheckEvents, Wanted};
use crate::events::{EventMessage, Invocation};
use crate::settle::{Forward, LambdaSettler, Settled};

/// Time kept back from the invocation's deadline to answer the runtime.
pub const ANSWER_MARGIN: Duration = Duration::from_millis(1500);

/// Where an invocation's messages came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Source {
    /// Amazon MQ for RabbitMQ.
    RabbitMq,
    /// SQS.
    Sqs,
    /// A job invoked directly.
    Direct,
}

impl Source {
    /// Which settlements go to the broker: for RabbitMQ events all of them
    /// (the mapping acks whatever the function survives); for SQS and direct
    /// invocations only dead letters (the caller redelivers a failure).
    pub fn forward(self) -> Forward {
        Forward {
            retries: self == Source::RabbitMq,
            dead_letters: true,
        }
    }
}

/// One message's outcome: its SQS item id, and how it settled.
type ItemResult = (
    Option<String>,
    Result<(Settled, Option<JobReport>), FunctionError>,
);

/// The state of one execution environment.
#[derive(Debug)]
pub struct LambdaWorker {
    setup: Setup,
    store: Arc<dyn ArtifactStore>,
    /// Reports go here: the broker, or (none configured) a queue in memory.
    queue: Arc<dyn JobQueue>,
    broker: Option<Arc<AmqpQueue>>,
    names: AmqpNames,
    ctx: OnceCell<HandlerContext>,
    /// The checks S3 and EventBridge events start, when routes are set.
    checks: Option<CheckEvents>,
}

impl LambdaWorker {
    /// Opens the store and, when `OXWRIGHT_AMQP_URL` is set, the broker;
    /// Chromium waits for the first invocation.
    pub async fn new(setup: Setup) -> anyhow::Result<Self> {
        let checks = CheckEvents::from_setup(&setup)?;
        let store = setup.store().await?;
        let names = AmqpNames::new(&setup.config.queue.prefix);
        let (queue, broker): (Arc<dyn JobQueue>, _) = match setup.config.queue.amqp_url {
            Some(_) => {
                let broker = Arc::new(setup.queue().await?);
                (broker.clone(), Some(broker))
            }
            None => (Arc::new(MemoryQueue::new()), None),
        };
        tracing::info!(store = %store.describe(), broker = broker.is_some(), "lambda worker initialised");
        Ok(Self {
            setup,
            store,
            queue,
            broker,
            names,
            ctx: OnceCell::new(),
            checks,
        })
    }

    /// Returns the browsers launched so far (0 before the first job).
    pub fn browsers_launched(&self) -> u64 {
        self.ctx.get().map_or(0, |c| c.pool.stats().launched)
    }

    async fn context(&self) -> Result<&HandlerContext, FunctionError> {
        self.ctx
            .get_or_try_init(|| async {
                let pool = self
                    .setup
                    .pool()
                    .await
                    .map_err(|e| FunctionError::Browser(format!("{e:#}")))?;
                oxwright_worker::metrics::observe_pool(&pool);
                let mut ctx = HandlerContext::new(pool, self.setup.policy.clone(), self.store.clone());
                ctx.workflow =
                    oxwright_worker::handlers::workflow::WorkflowContext::from_env(&self.setup.env)
                        .map_err(FunctionError::Config)?;
                ctx.extract_model = oxwright_worker::handlers::ExtractModel::from_section(
                    &self.setup.config.llm,
                    &self.setup.env,
                );
                Ok(ctx)
            })
            .await
    }

    /// Handles one invocation; `deadline` is the runtime's
    /// `Lambda-Runtime-Deadline-Ms`.
    pub async fn handle(&self, event: Value, deadline: Option<SystemTime>) -> Result<Value, FunctionError> {
        let invocation = crate::events::parse(event, &self.names)?;
        let ctx = self.context().await?;
        let mut answer = match invocation {
            Invocation::RabbitMq(messages) => {
                let results = self.run_all(ctx, messages, Source::RabbitMq, deadline).await;
                self.rabbitmq_answer(results)
            }
            Invocation::Sqs(messages) => {
                let results = self.run_all(ctx, messages, Source::Sqs, deadline).await;
                self.sqs_answer(results)
            }
            Invocation::Job(job) => {
                let body = serde_json::to_vec(&job).map_err(|e| FunctionError::BadEvent(e.to_string()))?;
                let message = EventMessage {
                    message: Message {
                        kind: job.kind(),
                        message_id: Some(job.id.to_string()),
                        headers: Default::default(),
                        body: body.into(),
                    },
                    redelivered: false,
                    item_id: None,
                };
                self.direct(ctx, message, &job.id.to_string(), deadline).await
            }
            Invocation::S3(records) => {
                let checks = self.check_events("an S3 notification")?;
                self.run_checks(ctx, checks.from_s3(&records), deadline).await
            }
            Invocation::EventBridge(event) => {
                let checks = self.check_events("an EventBridge event")?;
                let wanted = checks
                    .from_eventbridge(&event, &self.setup.policy)
                    .map_err(FunctionError::BadEvent)?;
                self.run_checks(ctx, wanted, deadline).await
            }
            Invocation::Check(call) => {
                let checks = self.check_events("a check invoked by name")?;
                let wanted = checks
                    .from_call(&call, &self.setup.policy)
                    .map_err(FunctionError::BadEvent)?;
                self.run_checks(ctx, vec![wanted], deadline).await
            }
        }?;
        // Which browsers served it: the same pids on every invocation of a
        // warm environment (an SQS answer keeps to its documented shape).
        if let Some(fields) = answer.as_object_mut()
            && fields.contains_key("browsers_launched")
        {
            fields.insert("browser_pids".into(), json!(ctx.pool.pids().await));
        }
        Ok(answer)
    }

    fn rabbitmq_answer(&self, results: Vec<ItemResult>) -> Result<Value, FunctionError> {
        let mut reports = Vec::new();
        let mut again = 0;
        for (_, result) in results {
            // One failure fails the batch: the mapping gives the whole batch
            // back, and keys derived from job ids make the rerun idempotent.
            let (settled, report) = result?;
            match settled {
                Settled::Retry { forwarded: false } | Settled::Abandoned => again += 1,
                Settled::DeadLetter {
                    forwarded: false,
                    kind,
                } => {
                    tracing::warn!(error_kind = %kind, "no broker configured: dead letter kept in error.json only");
                }
                _ => {}
            }
            reports.extend(report);
        }
        if again > 0 {
            return Err(FunctionError::BatchRetry(again));
        }
        Ok(json!({ "reports": reports, "browsers_launched": self.browsers_launched() }))
    }

    fn sqs_answer(&self, results: Vec<ItemResult>) -> Result<Value, FunctionError> {
        let mut response = aws_lambda_events::event::sqs::SqsBatchResponse::default();
        for (item, result) in results {
            let failed = match result {
                Ok((Settled::Ack, _)) | Ok((Settled::DeadLetter { forwarded: true, .. }, _)) => false,
                // Without a broker the queue's redrive policy keeps the dead letter.
                Ok(_) => true,
                Err(err) => {
                    tracing::warn!(error = %err, "message not settled; SQS gives it back");
                    true
                }
            };
            if failed {
                let mut failure = aws_lambda_events::event::sqs::BatchItemFailure::default();
                failure.item_identifier = item.unwrap_or_default();
                response.batch_item_failures.push(failure);
            }
        }
        tracing::debug!(
            browsers_launched = self.browsers_launched(),
            failures = response.batch_item_failures.len(),
            "sqs batch done"
        );
        serde_json::to_value(response).map_err(|e| FunctionError::BadEvent(e.to_string()))
    }

    async fn direct(
        &self,
        ctx: &HandlerContext,
        message: EventMessage,
        job_id: &str,
        deadline: Option<SystemTime>,
    ) -> Result<Value, FunctionError> {
        let (settled, report) = self.run_one(ctx, message, Source::Direct, deadline).await?;
        let failure = |fallback: ErrorKind| FunctionError::Job {
            job_id: job_id.to_owned(),
            error: Box::new(
                report
                    .as_ref()
                    .and_then(|r| r.error.clone())
                    .unwrap_or_else(|| JobError::new(fallback, "the job did not finish")),
            ),
        };
        match settled {
            Settled::Ack => Ok(json!({ "report": report, "browsers_launched": self.browsers_launched() })),
            Settled::Retry { .. } | Settled::Abandoned => Err(failure(ErrorKind::Timeout)),
            Settled::DeadLetter { .. } => Err(failure(ErrorKind::Internal)),
        }
    }

    fn check_events(&self, what: &str) -> Result<&CheckEvents, FunctionError> {
        self.checks.as_ref().ok_or_else(|| {
            FunctionError::BadEvent(format!(
                "{what} starts checks, and none is loaded here: set OXWRIGHT_SCHEDULER__CHECKS (and {} for events)",
                crate::checks::CHECK_EVENTS
            ))
        })
    }

    /// Runs each check an event asked for, at most the pool's width at
    /// once, and answers with their records; a check still running
    /// elsewhere is skipped and said so. A failed check is an answer, not
    /// an error: the event was handled, and the check's alert tells.
    async fn run_checks(
        &self,
        ctx: &HandlerContext,
        wanted: Vec<Wanted>,
        deadline: Option<SystemTime>,
    ) -> Result<Value, FunctionError> {
        let checks = self.check_events("an event")?;
        if wanted.is_empty() {
            tracing::info!("the event matches no check route");
        }
        let width = ctx.pool.capacity().max(1);
        let answers: Vec<Result<Value, FunctionError>> = futures::stream::iter(wanted)
            .map(|w| self.run_check(ctx, checks, w, deadline))
            .buffered(width)
            .collect()
            .await;
        let mut runs = Vec::new();
        let mut skipped = Vec::new();
        for answer in answers {
            let answer = answer?;
            if answer.get("skipped").is_some() {
                skipped.push(answer);
            } else {
                runs.push(answer);
            }
        }
        Ok(json!({ "runs": runs, "skipped": skipped, "browsers_launched": self.browsers_launched() }))
    }

    /// Runs one check to its end on this function: each attempt's job
    /// from a queue of its own through the consumer's path, its report
    /// to the check's runner, which retries or closes the run.
    async fn run_check(
        &self,
        ctx: &HandlerContext,
        checks: &CheckEvents,
        wanted: Wanted,
        deadline: Option<SystemTime>,
    ) -> Result<Value, FunctionError> {
        let queue = Arc::new(MemoryQueue::new());
        let runner = checks
            .runner(&wanted.check, self.store.clone(), queue.clone())
            .ok_or_else(|| FunctionError::BadEvent(format!("no check is named {:?}", wanted.check)))?;
        checks.sweep_outbox(&wanted.check, self.store.clone()).await;
        runner.take_up_runs().await;
        let started = match runner
            .trigger(&wanted.check, wanted.trigger, wanted.url, wanted.metadata, true)
            .await
        {
            Ok(started) => started,
            Err(err) => return Ok(crate::checks::not_started(&wanted.check, &err)),
        };
        let mut done = started.done.expect("a run asked to wait has a receiver");
        let mut consumer = queue
            .consume_many(&[JobKind::Workflow], 1)
            .await
            .map_err(|e| FunctionError::Broker(e.to_string()))?;
        let attempts = self.setup.config.queue.max_attempts.max(1);
        let run = async {
            loop {
                tokio::select! {
                    record = &mut done => {
                        return record.map_err(|_| FunctionError::Broker("the check's run was dropped".into()));
                    }
                    Some(delivery) = consumer.next() => {
                        let message = delivery.message().clone();
                        let _ = delivery.ack().await;
                        let report = self.run_attempt(ctx, message, attempts, deadline).await?;
                        runner.take(&report).await;
                    }
                }
            }
        };
        let record = match crate::worker::time_left(deadline) {
            Some(left) => tokio::time::timeout(left, run)
                .await
                .map_err(|_| FunctionError::Deadline(format!("check {}", wanted.check)))??,
            None => run.await?,
        };
        serde_json::to_value(&record).map_err(|e| FunctionError::BadEvent(e.to_string()))
    }

    /// Runs one attempt's job, delivering it again as the broker would
    /// when it ends with no report (a crashed browser), up to `attempts`
    /// times; then its report says it did not finish.
    async fn run_attempt(
        &self,
        ctx: &HandlerContext,
        message: Message,
        attempts: u32,
        deadline: Option<SystemTime>,
    ) -> Result<JobReport, FunctionError> {
        for delivery in 1..=attempts {
            let event = EventMessage {
                message: message.clone(),
                redelivered: delivery > 1,
                item_id: None,
            };
            if let (_, Some(report)) = self.run_one(ctx, event, Source::Direct, deadline).await? {
                return Ok(report);
            }
        }
        let job: oxwright_jobs::Job =
            serde_json::from_slice(&message.body).map_err(|e| FunctionError::BadEvent(e.to_string()))?;
        Ok(JobReport {
            job_id: job.id,
            kind: JobKind::Workflow,
            batch_id: None,
            url: job.url().to_string(),
            status: oxwright_jobs::ReportStatus::Failed,
            error: Some(JobError::new(
                ErrorKind::Internal,
                format!("the attempt ended with no report after {attempts} deliveries"),
            )),
            artifacts: Vec::new(),
            attempt: attempts,
            duration_ms: 0.0,
            finished_at: chrono::Utc::now(),
        })
    }

    async fn run_all(
        &self,
        ctx: &HandlerContext,
        messages: Vec<EventMessage>,
        source: Source,
        deadline: Option<SystemTime>,
    ) -> Vec<ItemResult> {
        let width = ctx.pool.capacity().max(1);
        futures::stream::iter(messages)
            .map(|m| async move {
                let item = m.item_id.clone();
                (item, self.run_one(ctx, m, source, deadline).await)
            })
            .buffered(width)
            .collect()
            .await
    }

    #[tracing::instrument(skip_all, fields(source = ?source, kind = %m.message.kind))]
    async fn run_one(
        &self,
        ctx: &HandlerContext,
        m: EventMessage,
        source: Source,
        deadline: Option<SystemTime>,
    ) -> Result<(Settled, Option<JobReport>), FunctionError> {
        let kind = m.message.kind;
        let broker = self.broker.as_ref().map(|b| b.detached_settler(kind));
        let (settler, outcome) = LambdaSettler::new(broker, source.forward());
        let delivery = Delivery::new(
            m.message,
            m.redelivered,
            self.queue.max_message_bytes(),
            Box::new(settler),
        );
        let span = tracing::info_span!(
            "delivery",
            kind = %kind,
            message_id = delivery.message_id().unwrap_or(""),
            redelivered = delivery.redelivered(),
        );
        oxwright_telemetry::set_parent_from_headers(&span, delivery.headers());
        let opts = self.consumer_options(kind, source, ctx);
        let run = handle_delivery(ctx, self.queue.as_ref(), &opts, delivery).instrument(span);
        let report = match time_left(deadline) {
            // A workflow hands the rest of its run to a fresh invocation
            // before the deadline; whatever still runs past it is cut.
            Some(left) => tokio::time::timeout(left, STOP_BY.scope(std::time::Instant::now() + left, run))
                .await
                .map_err(|_| FunctionError::Deadline(format!("a {kind} job")))?,
            None => run.await,
        }
        .map_err(|e| FunctionError::Broker(e.to_string()))?;
        let settled = outcome
            .lock()
            .expect("outcome lock")
            .take()
            .unwrap_or(Settled::Abandoned);
        Ok((settled, report))
    }

    fn consumer_options(&self, kind: JobKind, source: Source, ctx: &HandlerContext) -> ConsumerOptions {
        let queue = &self.setup.config.queue;
        let mut opts = ConsumerOptions::new(kind, ctx.pool.capacity());
        opts.retry_delay = Duration::from_millis(queue.retry_delay_ms);
        // The broker counts attempts in the job; SQS and direct callers
        // count deliveries themselves (redrive policy, async retries).
        opts.max_attempts = match source {
            Source::RabbitMq => queue.max_attempts.max(1),
            Source::Sqs | Source::Direct => u32::MAX,
        };
        opts
    }

    /// Closes the browsers (removing their profiles) and the broker
    /// connection; for the runtime's shutdown signal.
    pub async fn shutdown(&self) {
        if let Some(ctx) = self.ctx.get() {
            ctx.pool.shutdown().await;
        }
        if let Some(broker) = &self.broker {
            broker.close().await;
        }
        tracing::info!("lambda worker stopped");
    }
}

/// Returns the time a job may take before `deadline` (less the answer
/// margin); zero when it has passed; `None` without a deadline.
pub fn time_left(deadline: Option<SystemTime>) -> Option<Duration> {
    let deadline = deadline?;
    let left = deadline.duration_since(SystemTime::now()).unwrap_or_default();
    Some(left.saturating_sub(ANSWER_MARGIN))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn time_left_keeps_a_margin_and_never_goes_negative() {
        assert_eq!(time_left(None), None);
        assert_eq!(time_left(Some(SystemTime::UNIX_EPOCH)), Some(Duration::ZERO));
        let far = SystemTime::now() + Duration::from_secs(60);
        let left = time_left(Some(far)).unwrap();
        assert!(left <= Duration::from_secs(60) - ANSWER_MARGIN);
    }
}
