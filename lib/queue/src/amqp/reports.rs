//! The scheduler's side of the results queue: a subscription that hands
//! out reports in order and acks each one as it is handed out.

use async_trait::async_trait;
use lapin::options::BasicAckOptions;
use oxwright_jobs::JobReport;
use tracing::warn;

use super::consumer::Subscription;
use crate::{QueueError, ReportStream};

/// How many reports the broker may send ahead of the one being read.
pub(super) const REPORT_PREFETCH: u16 = 64;

/// A subscription to the results queue.
#[derive(Debug)]
pub(super) struct AmqpReportStream {
    pub(super) subscription: Subscription,
}

#[async_trait]
impl ReportStream for AmqpReportStream {
    async fn next(&mut self) -> Option<Result<JobReport, QueueError>> {
        loop {
            let delivery = self.subscription.next().await?;
            // Acked when handed out: a report buffered here but never read
            // goes back to the queue when the stream is dropped.
            if let Err(err) = delivery.acker.ack(BasicAckOptions::default()).await {
                // The channel is gone; the broker redelivers the report on
                // the next subscription, so it is not handed out twice.
                warn!(error = %err, "cannot ack report, waiting for its redelivery");
                continue;
            }
            return Some(
                serde_json::from_slice::<JobReport>(&delivery.data)
                    .map_err(|e| QueueError::MalformedReport(e.to_string())),
            );
        }
    }
}
