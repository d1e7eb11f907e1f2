//! The scheduler's side of the results queue: a subscription that hands
//! out reports in order and acks each one as it is handed out. Reading is
//! cancel-safe: the delivery being acked stays in a slot, so a read
//! abandoned during the ack hands the report out on the next call.

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
    /// The delivery taken from the subscription but not yet handed out.
    pub(super) pending: Option<lapin::message::Delivery>,
}

#[async_trait]
impl ReportStream for AmqpReportStream {
    async fn next(&mut self) -> Option<Result<JobReport, QueueError>> {
        loop {
            if self.pending.is_none() {
                self.pending = Some(self.subscription.next().await?);
            }
            let delivery = self.pending.as_ref().expect("filled above");
            // Acked when handed out: a report buffered here but never read
            // goes back to the queue when the stream is dropped. A second
            // ack of the same delivery (after a cancelled read) is a no-op.
            let acked = delivery.acker.ack(BasicAckOptions::default()).await;
            let delivery = self.pending.take().expect("still there");
            if let Err(err) = acked {
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
