"""The Redis transport of Redline's workers: kombu's, except that a message whose acknowledgement
Redis did not answer (it hung, or restarted) no longer stops the worker taking messages.

kombu counts a message as unacknowledged until Redis answers its acknowledgement; when Redis
hangs for longer than the broker timeout at that moment, the acknowledgement fails, Celery logs
"Couldn't ack" and goes on, and the message stays counted for good. With a prefetch of one (the
solo pool, ``CELERY_WORKER_PREFETCH_MULTIPLIER = 1``) the worker then never asks Redis for
another message, though alive and idle and its queue full: the soak's stalled workers. Here the
worker forgets the message either way, and removes it from Redis's index of unacknowledged
messages at its next acknowledgement that Redis answers. A worker that closes meanwhile leaves
it there: Redis hands it to a worker again after the visibility timeout (acks late: every task
may run twice, and Redline's jobs find their work done).

:func:`install` makes it the transport of every ``redis://`` and ``rediss://`` URL.
"""

from __future__ import annotations

from kombu.transport import TRANSPORT_ALIASES, redis, virtual


class QoS(redis.QoS):
    """kombu's Redis QoS, which forgets a message whose acknowledgement failed (see the module)."""

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        #: Acknowledged messages still in Redis's index: their acknowledgement failed.
        self.unremoved: set[str] = set()

    def ack(self, delivery_tag) -> None:
        """Remove the message, and any whose acknowledgement failed before, from Redis's index;
        forget it here even when Redis does not answer (the error is raised for Celery's log)."""
        tags = [*self.unremoved, delivery_tag]
        try:
            with self.pipe_or_acquire() as pipe:
                for tag in tags:
                    self._remove_from_indices(tag, pipe)
                pipe.execute()
            self.unremoved.clear()
        except Exception:
            self.unremoved.add(delivery_tag)
            raise
        finally:
            virtual.QoS.ack(self, delivery_tag)

    def reject(self, delivery_tag, requeue=False) -> None:
        """kombu's reject, forgetting the message here even when Redis does not answer."""
        try:
            super().reject(delivery_tag, requeue=requeue)
        except Exception:
            if not requeue:
                self.unremoved.add(delivery_tag)
            virtual.QoS.ack(self, delivery_tag)
            raise


class Channel(redis.Channel):
    QoS = QoS


class Transport(redis.Transport):
    Channel = Channel


def install() -> None:
    """Make :class:`Transport` the transport of ``redis://`` and ``rediss://`` broker URLs (before
    the first connection: kombu remembers the class of each scheme)."""
    for scheme in ("redis", "rediss"):
        TRANSPORT_ALIASES[scheme] = f"{__name__}:Transport"
