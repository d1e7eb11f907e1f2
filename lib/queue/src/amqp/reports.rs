//! The scheduler's side of the results queue: a subscription that hands
//! out reports in order, acked as they are handed out (`next`) or later by
//! the caller (`next_unacked`, once the report is stored). Reading is
//! cancel-safe: the delivery being acked stays in a slot, so a read
//! abandoned during the ack hands the report out on the next call.

use async_trait::async_trait;
use lapin::Acker;
use lapin::options::BasicAckOptions;
use oxwright_jobs::JobReport;
use tracing::warn;

use super::consumer::Subscription;
use super::wire::{broker_error, broker_message, within};
use crate::{QueueError, ReportAck, ReportAcker, ReportStream};

/// How many reports the broker may send ahead of the ones acked: a
/// subscriber that acks after storing (`next_unacked`) holds up to this
/// many between two writes of its manifests.
pub(super) const REPORT_PREFETCH: u16 = 1_024;

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
                self.pending = Some(self.subscription.next().await?.1);
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
            return Some(decode(&delivery.data));
        }
    }

    async fn next_unacked(&mut self) -> Option<(Result<JobReport, QueueError>, ReportAck)> {
        // A delivery left by a cancelled `next` comes first; nothing is
        // awaited once a delivery is taken, so a cancelled call loses none.
        let delivery = match self.pending.take() {
            Some(delivery) => delivery,
            None => self.subscription.next().await?.1,
        };
        let limit = self.subscription.link().options.round_trip_timeout;
        let ack = ReportAck::new(Box::new(AmqpReportAck(delivery.acker, limit)));
        Some((decode(&delivery.data), ack))
    }
}

fn decode(data: &[u8]) -> Result<JobReport, QueueError> {
    serde_json::from_slice::<JobReport>(data).map_err(|e| QueueError::MalformedReport(e.to_string()))
}

/// Acks one report delivery on the channel it came on; after that channel
/// closed the broker hands the report out again, and the ack fails.
#[derive(Debug)]
struct AmqpReportAck(Acker, std::time::Duration);

#[async_trait]
impl ReportAcker for AmqpReportAck {
    async fn ack(self: Box<Self>) -> Result<(), QueueError> {
        let acked = within("ack report", self.1, async {
            self.0
                .ack(BasicAckOptions::default())
                .await
                .map_err(|e| broker_error("ack report", e))
        })
        .await?;
        if acked {
            Ok(())
        } else {
            Err(broker_message(
                "ack report: its channel is gone; the broker hands it out again",
                true,
            ))
        }
    }
}
