package broker

import (
	"context"
	"errors"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/samsa-io/samsa/internal/controller"
	"github.com/samsa-io/samsa/internal/coord"
	klog "github.com/samsa-io/samsa/internal/log"
	"github.com/samsa-io/samsa/internal/records"
	"github.com/samsa-io/samsa/internal/replica"
)

// errorAnswer is err as the error code and message of a response that
// carries both.
func errorAnswer(err error) (int16, *string) {
	msg := err.Error()
	return errorCode(err), &msg
}

// errorCode maps an internal error to its Kafka error code. It is the one
// place where samsa's errors become Kafka's (STYLE habit 9).
func errorCode(err error) int16 {
	switch {
	case err == nil:
		return 0
	case errors.Is(err, replica.ErrNotLeader), errors.Is(err, replica.ErrClosed), errors.Is(err, klog.ErrClosed):
		return kerr.NotLeaderForPartition.Code
	case errors.Is(err, replica.ErrNotEnoughReplicas):
		return kerr.NotEnoughReplicas.Code
	case errors.Is(err, replica.ErrNotEnoughReplicasAfterAppend):
		return kerr.NotEnoughReplicasAfterAppend.Code
	case errors.Is(err, replica.ErrUnknownReplica):
		return kerr.ReplicaNotAvailable.Code
	case errors.Is(err, replica.ErrFencedLeaderEpoch):
		return kerr.FencedLeaderEpoch.Code
	case errors.Is(err, replica.ErrUnknownLeaderEpoch):
		return kerr.UnknownLeaderEpoch.Code
	case errors.Is(err, klog.ErrOffsetOutOfRange):
		return kerr.OffsetOutOfRange.Code
	case errors.Is(err, klog.ErrOutOfOrderSequence):
		return kerr.OutOfOrderSequenceNumber.Code
	case errors.Is(err, klog.ErrDuplicateSequence):
		return kerr.DuplicateSequenceNumber.Code
	case errors.Is(err, klog.ErrInvalidProducerEpoch):
		return kerr.InvalidProducerEpoch.Code
	case errors.Is(err, klog.ErrInvalidTxnState):
		return kerr.InvalidTxnState.Code
	case errors.Is(err, klog.ErrCoordinatorFenced):
		return kerr.TransactionCoordinatorFenced.Code
	case errors.Is(err, klog.ErrCorruptBatch):
		return kerr.CorruptMessage.Code
	case errors.Is(err, errTopicAuthorization):
		return kerr.TopicAuthorizationFailed.Code
	case errors.Is(err, coord.ErrTopicExists):
		return kerr.TopicAlreadyExists.Code
	case errors.Is(err, coord.ErrTopicNotFound):
		return kerr.UnknownTopicOrPartition.Code
	case errors.Is(err, controller.ErrNotController):
		return kerr.NotController.Code
	case errors.Is(err, controller.ErrElectionNotNeeded):
		return kerr.ElectionNotNeeded.Code
	case errors.Is(err, controller.ErrPreferredLeaderNotAvailable):
		return kerr.PreferredLeaderNotAvailable.Code
	case errors.Is(err, controller.ErrEligibleLeadersNotAvailable):
		return kerr.EligibleLeadersNotAvailable.Code
	case errors.Is(err, controller.ErrUnknownPartition):
		return kerr.UnknownTopicOrPartition.Code
	case errors.Is(err, errOffsetNotAvailable):
		return kerr.OffsetNotAvailable.Code
	case errors.Is(err, errInvalidTopic):
		return kerr.InvalidTopicException.Code
	case errors.Is(err, errInvalidConfig):
		return kerr.InvalidConfig.Code
	case errors.Is(err, errInvalidPartitions):
		return kerr.InvalidPartitions.Code
	case errors.Is(err, errInvalidReplicaAssignment):
		return kerr.InvalidReplicaAssignment.Code
	case errors.Is(err, errInvalidReplicationFactor):
		return kerr.InvalidReplicationFactor.Code
	case errors.Is(err, errInvalidRequest):
		return kerr.InvalidRequest.Code
	case errors.Is(err, context.DeadlineExceeded):
		return kerr.RequestTimedOut.Code
	case errors.Is(err, records.ErrCorrupt):
		return kerr.CorruptMessage.Code
	case errors.Is(err, records.ErrMessageTooLarge):
		return kerr.MessageTooLarge.Code
	case errors.Is(err, records.ErrRecordListTooLarge):
		return kerr.RecordListTooLarge.Code
	case errors.Is(err, records.ErrInvalidTimestamp):
		return kerr.InvalidTimestamp.Code
	case errors.Is(err, records.ErrUnsupportedCompression):
		return kerr.UnsupportedCompressionType.Code
	case errors.Is(err, records.ErrInvalidRecord):
		return kerr.InvalidRecord.Code
	}
	var ke *kerr.Error
	if errors.As(err, &ke) {
		return ke.Code
	}
	return kerr.UnknownServerError.Code
}
