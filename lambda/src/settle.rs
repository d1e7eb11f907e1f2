//! Settling a message that the Lambda service, not this process, took off
//! its source: the consumer's settlement is recorded so the function can
//! answer for it (an SQS batch item failure, an error for a direct
//! invocation), and the parts that publish (a retry with the next attempt,
//! a dead-letter record) go to the broker when one is configured and the
//! source is one that gives the message back no other way.

use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use oxwright_queue::{Message, QueueError, Settlement, Settler};

/// How the consumer's path settled a message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Settled {
    /// Done.
    Ack,
    /// Another attempt is wanted; `forwarded` when it was published to the
    /// broker's retry queue.
    Retry {
        /// Published to the broker's retry queue.
        forwarded: bool,
    },
    /// Given up; `forwarded` when the record went to the broker's
    /// dead-letter queue.
    DeadLetter {
        /// Published to the broker's dead-letter queue.
        forwarded: bool,
        /// The reason's error kind.
        kind: String,
    },
    /// Dropped unsettled (the invocation ran out of time).
    Abandoned,
}

/// Which settlements are carried out on the broker.
#[derive(Debug, Clone, Copy, Default)]
pub struct Forward {
    /// Retries go to the broker's retry queues.
    pub retries: bool,
    /// Dead letters go to the broker's dead-letter queue.
    pub dead_letters: bool,
}

/// The settler handed to each message's [`oxwright_queue::Delivery`].
#[derive(Debug)]
pub struct LambdaSettler {
    broker: Option<Box<dyn Settler>>,
    forward: Forward,
    outcome: Arc<Mutex<Option<Settled>>>,
}

impl LambdaSettler {
    /// Returns a settler forwarding what `forward` says through `broker`,
    /// and the slot its outcome lands in.
    pub fn new(broker: Option<Box<dyn Settler>>, forward: Forward) -> (Self, Arc<Mutex<Option<Settled>>>) {
        let outcome = Arc::new(Mutex::new(None));
        let settler = Self {
            broker,
            forward,
            outcome: outcome.clone(),
        };
        (settler, outcome)
    }

    fn record(&self, settled: Settled) {
        *self.outcome.lock().expect("outcome lock") = Some(settled);
    }
}

#[async_trait]
impl Settler for LambdaSettler {
    async fn settle(self: Box<Self>, message: Message, settlement: Settlement) -> Result<(), QueueError> {
        let mut this = self;
        let broker = this.broker.take();
        let settled = match &settlement {
            Settlement::Ack => Settled::Ack,
            Settlement::Requeue => Settled::Retry { forwarded: false },
            Settlement::Retry { .. } => Settled::Retry {
                forwarded: this.forward.retries && broker.is_some(),
            },
            Settlement::DeadLetter(reason) => Settled::DeadLetter {
                forwarded: this.forward.dead_letters && broker.is_some(),
                kind: reason.kind.clone(),
            },
        };
        let publish = matches!(
            settled,
            Settled::Retry { forwarded: true } | Settled::DeadLetter { forwarded: true, .. }
        );
        if publish && let Some(broker) = broker {
            broker.settle(message, settlement).await?;
        }
        this.record(settled);
        Ok(())
    }

    fn abandon(self: Box<Self>, _message: Message) {
        self.record(Settled::Abandoned);
    }
}
