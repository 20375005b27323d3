package main

// `samsa transactions list|describe|describe-producers|abort|find-hanging`
// inspects and repairs transactions as kafka-transactions.sh does, with
// ListTransactions, DescribeTransactions, DescribeProducers and
// WriteTxnMarkers (KIP-664). It works against any Kafka cluster.
//
//   - list: every transactional id of every broker, with its coordinator,
//     producer id and state.
//   - describe --transactional-id ID: the id's coordinator, producer,
//     state, timeout, start time, duration and partitions.
//   - describe-producers --topic T --partition P: the producers the
//     partition's leader tracks, with the start offset of their open
//     transaction.
//   - abort --topic T --partition P --start-offset N: writes an abort
//     marker for the producer whose open transaction on the partition
//     starts at N (its epoch and coordinator epoch from
//     DescribeProducers); or, with --producer-id, --producer-epoch and
//     --coordinator-epoch, for that producer. For a hanging transaction:
//     one its coordinator no longer knows of, which holds the partition's
//     last stable offset back.
//   - find-hanging: the open transactions of partitions (of --topic, or
//     of every topic) older than --max-transaction-timeout whose producer
//     its transactional id's coordinator does not show in an open
//     transaction on that partition.

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	"github.com/twmb/franz-go/pkg/kadm"
)

func init() { extraCommands = append(extraCommands, newTransactionsCmd) }

func newTransactionsCmd() *cobra.Command {
	o := &extraOptions{}
	cmd := &cobra.Command{
		Use:   "transactions",
		Short: "List, describe, abort and find hanging transactions, like kafka-transactions.sh",
	}
	cmd.PersistentFlags().DurationVar(&o.timeout, "timeout", defaultTimeout,
		"give up if the cluster has not answered within this time")
	cmd.AddCommand(
		&cobra.Command{
			Use:   "list",
			Short: "List every transactional id with its coordinator, producer id and state",
			Args:  cobra.NoArgs,
			RunE: func(cmd *cobra.Command, _ []string) error {
				return o.withAdmin(cmd, func(ctx context.Context, adm *kadm.Client) error {
					ls, err := adm.ListTransactions(ctx, nil, nil)
					if err != nil {
						return err
					}
					return printTxnList(cmd.OutOrStdout(), ls.Sorted())
				})
			},
		},
		newTxnDescribeCmd(o),
		newTxnDescribeProducersCmd(o),
		newTxnAbortCmd(o),
		newTxnFindHangingCmd(o),
	)
	return cmd
}

func printTxnList(w io.Writer, ls []kadm.ListedTransaction) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprint(tw, "TRANSACTIONAL-ID\tCOORDINATOR\tPRODUCER-ID\tSTATE\n")
	for _, l := range ls {
		fmt.Fprintf(tw, "%s\t%d\t%d\t%s\n", l.TxnID, l.Coordinator, l.ProducerID, l.State)
	}
	return tw.Flush()
}

func newTxnDescribeCmd(o *extraOptions) *cobra.Command {
	var id string
	cmd := &cobra.Command{
		Use:   "describe",
		Short: "Describe a transactional id's current transaction",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return o.withAdmin(cmd, func(ctx context.Context, adm *kadm.Client) error {
				ds, err := adm.DescribeTransactions(ctx, id)
				if err != nil {
					return err
				}
				d, ok := ds[id]
				if !ok {
					return fmt.Errorf("no answer for transactional id %q", id)
				}
				if d.Err != nil {
					return fmt.Errorf("transactional id %q: %w", id, d.Err)
				}
				return printTxnDescription(cmd.OutOrStdout(), d, time.Now())
			})
		},
	}
	cmd.Flags().StringVar(&id, "transactional-id", "", "the transactional id (required)")
	_ = cmd.MarkFlagRequired("transactional-id")
	return cmd
}

func printTxnDescription(w io.Writer, d kadm.DescribedTransaction, now time.Time) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprint(tw, "COORDINATOR\tTRANSACTIONAL-ID\tPRODUCER-ID\tPRODUCER-EPOCH\tSTATE\tTIMEOUT-MS\tSTART-TIME-MS\tDURATION-MS\tPARTITIONS\n")
	start, duration := "-", "-"
	if d.StartTimestamp >= 0 {
		start = fmt.Sprint(d.StartTimestamp)
		duration = fmt.Sprint(now.UnixMilli() - d.StartTimestamp)
	}
	var parts []string
	for _, p := range d.Topics.Sorted() {
		for _, q := range p.Partitions {
			parts = append(parts, fmt.Sprintf("%s-%d", p.Topic, q))
		}
	}
	ps := strings.Join(parts, ",")
	if ps == "" {
		ps = "-"
	}
	fmt.Fprintf(tw, "%d\t%s\t%d\t%d\t%s\t%d\t%s\t%s\t%s\n", d.Coordinator, d.TxnID, d.ProducerID, d.ProducerEpoch,
		d.State, d.TimeoutMillis, start, duration, ps)
	return tw.Flush()
}

// describeProducers asks the partition's leader for its producers.
func describeProducers(ctx context.Context, adm *kadm.Client, topic string, partition int32) ([]kadm.DescribedProducer, error) {
	ps, err := adm.DescribeProducers(ctx, kadm.TopicsSet{topic: {partition: {}}})
	if err != nil {
		return nil, err
	}
	p, ok := ps[topic].Partitions[partition]
	if !ok {
		return nil, fmt.Errorf("no answer for %s-%d", topic, partition)
	}
	if p.Err != nil {
		return nil, fmt.Errorf("%s-%d: %w", topic, partition, p.Err)
	}
	return p.ActiveProducers.Sorted(), nil
}

func newTxnDescribeProducersCmd(o *extraOptions) *cobra.Command {
	var topic string
	var partition int32
	cmd := &cobra.Command{
		Use:   "describe-producers",
		Short: "Describe the producers of a partition, with their open transactions",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return o.withAdmin(cmd, func(ctx context.Context, adm *kadm.Client) error {
				ps, err := describeProducers(ctx, adm, topic, partition)
				if err != nil {
					return err
				}
				tw := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 0, 2, ' ', 0)
				fmt.Fprint(tw, "PRODUCER-ID\tPRODUCER-EPOCH\tCOORDINATOR-EPOCH\tLAST-SEQUENCE\tLAST-TIMESTAMP\tTXN-START-OFFSET\n")
				for _, p := range ps {
					start := "-"
					if p.CurrentTxnStartOffset >= 0 {
						start = fmt.Sprint(p.CurrentTxnStartOffset)
					}
					fmt.Fprintf(tw, "%d\t%d\t%d\t%d\t%d\t%s\n", p.ProducerID, p.ProducerEpoch, p.CoordinatorEpoch, p.LastSequence, p.LastTimestamp, start)
				}
				return tw.Flush()
			})
		},
	}
	cmd.Flags().StringVar(&topic, "topic", "", "the topic (required)")
	cmd.Flags().Int32Var(&partition, "partition", -1, "the partition (required)")
	_ = cmd.MarkFlagRequired("topic")
	_ = cmd.MarkFlagRequired("partition")
	return cmd
}

func newTxnAbortCmd(o *extraOptions) *cobra.Command {
	var topic string
	var partition, coordEpoch int32
	var startOffset, pid int64
	var epoch int16
	cmd := &cobra.Command{
		Use:   "abort",
		Short: "Abort a (hanging) transaction on a partition by writing an abort marker",
		Long: "Abort a transaction on one partition: the open transaction that starts at --start-offset\n" +
			"(its producer from describe-producers), or the one of --producer-id, --producer-epoch and\n" +
			"--coordinator-epoch. Needs ALTER (or CLUSTER_ACTION) on the cluster.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			byOffset := cmd.Flags().Changed("start-offset")
			byProducer := cmd.Flags().Changed("producer-id")
			if byOffset == byProducer {
				return errors.New("give either --start-offset or --producer-id (with --producer-epoch and --coordinator-epoch)")
			}
			if byProducer && (!cmd.Flags().Changed("producer-epoch") || !cmd.Flags().Changed("coordinator-epoch")) {
				return errors.New("--producer-id needs --producer-epoch and --coordinator-epoch")
			}
			return o.withAdmin(cmd, func(ctx context.Context, adm *kadm.Client) error {
				m := kadm.TxnMarkers{ProducerID: pid, ProducerEpoch: epoch, CoordinatorEpoch: coordEpoch,
					Topics: kadm.TopicsSet{topic: {partition: {}}}}
				if byOffset {
					ps, err := describeProducers(ctx, adm, topic, partition)
					if err != nil {
						return err
					}
					i := slices.IndexFunc(ps, func(p kadm.DescribedProducer) bool { return p.CurrentTxnStartOffset == startOffset })
					if i < 0 {
						return fmt.Errorf("no open transaction on %s-%d starts at offset %d", topic, partition, startOffset)
					}
					m.ProducerID, m.ProducerEpoch, m.CoordinatorEpoch = ps[i].ProducerID, ps[i].ProducerEpoch, ps[i].CoordinatorEpoch
				}
				rs, err := adm.WriteTxnMarkers(ctx, m)
				if err != nil {
					return err
				}
				for _, r := range rs {
					for _, t := range r.Topics {
						for _, p := range t.Partitions {
							if p.Err != nil {
								return fmt.Errorf("abort on %s-%d: %w", p.Topic, p.Partition, p.Err)
							}
						}
					}
				}
				fmt.Fprintf(cmd.OutOrStdout(), "Aborted the transaction of producer %d (epoch %d) on %s-%d\n", m.ProducerID, m.ProducerEpoch, topic, partition)
				return nil
			})
		},
	}
	cmd.Flags().StringVar(&topic, "topic", "", "the topic (required)")
	cmd.Flags().Int32Var(&partition, "partition", -1, "the partition (required)")
	cmd.Flags().Int64Var(&startOffset, "start-offset", -1, "the first offset of the open transaction to abort")
	cmd.Flags().Int64Var(&pid, "producer-id", -1, "the producer id of the transaction to abort")
	cmd.Flags().Int16Var(&epoch, "producer-epoch", -1, "its producer epoch")
	cmd.Flags().Int32Var(&coordEpoch, "coordinator-epoch", -1, "the coordinator epoch of its markers")
	_ = cmd.MarkFlagRequired("topic")
	_ = cmd.MarkFlagRequired("partition")
	return cmd
}

// hangingTxn is an open transaction find-hanging reports.
type hangingTxn struct {
	p   kadm.DescribedProducer
	age time.Duration
}

func newTxnFindHangingCmd(o *extraOptions) *cobra.Command {
	var topic string
	var maxTimeout time.Duration
	cmd := &cobra.Command{
		Use:   "find-hanging",
		Short: "Find open transactions older than the largest transaction timeout that their coordinator does not know",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return o.withAdmin(cmd, func(ctx context.Context, adm *kadm.Client) error {
				hanging, err := findHanging(ctx, adm, topic, maxTimeout, time.Now())
				if err != nil {
					return err
				}
				tw := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 0, 2, ' ', 0)
				fmt.Fprint(tw, "TOPIC\tPARTITION\tPRODUCER-ID\tPRODUCER-EPOCH\tCOORDINATOR-EPOCH\tSTART-OFFSET\tLAST-TIMESTAMP\tDURATION-MIN\n")
				for _, h := range hanging {
					fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%d\t%d\t%d\t%d\n", h.p.Topic, h.p.Partition, h.p.ProducerID, h.p.ProducerEpoch,
						h.p.CoordinatorEpoch, h.p.CurrentTxnStartOffset, h.p.LastTimestamp, int64(h.age/time.Minute))
				}
				return tw.Flush()
			})
		},
	}
	cmd.Flags().StringVar(&topic, "topic", "", "look at this topic's partitions only (default: every topic)")
	cmd.Flags().DurationVar(&maxTimeout, "max-transaction-timeout", 15*time.Minute,
		"the cluster's transaction.max.timeout.ms: open transactions younger than this are not hanging")
	return cmd
}

// findHanging lists the open transactions of the partitions older than
// maxTimeout (by their producer's last timestamp) whose producer no
// transactional id shows in an open transaction on that partition.
func findHanging(ctx context.Context, adm *kadm.Client, topic string, maxTimeout time.Duration, now time.Time) ([]hangingTxn, error) {
	var topics []string
	if topic != "" {
		topics = []string{topic}
	}
	md, err := adm.Metadata(ctx, topics...)
	if err != nil {
		return nil, err
	}
	set := kadm.TopicsSet{}
	for _, t := range md.Topics.Sorted() {
		if t.Err != nil {
			return nil, fmt.Errorf("topic %s: %w", t.Topic, t.Err)
		}
		for _, p := range t.Partitions.Sorted() {
			set.Add(t.Topic, p.Partition)
		}
	}
	described, err := adm.DescribeProducers(ctx, set)
	if err != nil {
		return nil, err
	}
	var open []kadm.DescribedProducer
	for _, t := range described.Sorted() {
		for _, ps := range t.Partitions.Sorted() {
			if ps.Err != nil {
				return nil, fmt.Errorf("%s-%d: %w", ps.Topic, ps.Partition, ps.Err)
			}
			for _, p := range ps.ActiveProducers.Sorted() {
				if p.CurrentTxnStartOffset >= 0 && now.Sub(time.UnixMilli(p.LastTimestamp)) > maxTimeout {
					open = append(open, p)
				}
			}
		}
	}
	if len(open) == 0 {
		return nil, nil
	}
	// The transactions the coordinators know to be open, by producer.
	var pids []int64
	for _, p := range open {
		pids = append(pids, p.ProducerID)
	}
	listed, err := adm.ListTransactions(ctx, pids, nil)
	if err != nil {
		return nil, err
	}
	var ids []string
	for id := range listed {
		ids = append(ids, id)
	}
	known := map[int64]kadm.TopicsSet{}
	if len(ids) > 0 {
		ds, err := adm.DescribeTransactions(ctx, ids...)
		if err != nil {
			return nil, err
		}
		for _, d := range ds {
			if d.Err == nil && d.State != "Empty" && d.State != "CompleteCommit" && d.State != "CompleteAbort" {
				known[d.ProducerID] = d.Topics
			}
		}
	}
	var out []hangingTxn
	for _, p := range open {
		if parts, ok := known[p.ProducerID]; ok {
			if _, in := parts[p.Topic][p.Partition]; in {
				continue
			}
		}
		out = append(out, hangingTxn{p: p, age: now.Sub(time.UnixMilli(p.LastTimestamp))})
	}
	return out, nil
}
