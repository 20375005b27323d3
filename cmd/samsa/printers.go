package main

// Output of the client commands other than `topic describe` (which has
// describe_print.go). Pure functions, tested in printers_test.go.

import (
	"bufio"
	"fmt"
	"io"
	"sort"
	"strconv"

	"github.com/twmb/franz-go/pkg/kadm"
)

// topicNames returns the names in details, sorted, optionally without
// internal topics.
func topicNames(details kadm.TopicDetails, excludeInternal bool) []string {
	var names []string
	for name, d := range details {
		if excludeInternal && d.IsInternal {
			continue
		}
		names = append(names, name)
	}
	sort.Strings(names)
	return names
}

// printTopicList writes one topic name per line, as `kafka-topics --list`.
func printTopicList(w io.Writer, names []string) error {
	bw := bufio.NewWriter(w)
	for _, n := range names {
		bw.WriteString(n)
		bw.WriteByte('\n')
	}
	return bw.Flush()
}

// recordFormat says which fields `consume` prints before each value. The
// layout follows kafka-console-consumer's default formatter:
//
//	[Partition:P<TAB>][Offset:O<TAB>][key<TAB>]value
//
// A null key or value prints as "null".
type recordFormat struct {
	Partition, Offset, Key bool
}

// appendRecord appends the line for one record, newline included.
func (f recordFormat) appendRecord(dst []byte, partition int32, offset int64, key, value []byte) []byte {
	if f.Partition {
		dst = append(dst, "Partition:"...)
		dst = strconv.AppendInt(dst, int64(partition), 10)
		dst = append(dst, '\t')
	}
	if f.Offset {
		dst = append(dst, "Offset:"...)
		dst = strconv.AppendInt(dst, offset, 10)
		dst = append(dst, '\t')
	}
	if f.Key {
		dst = appendNullable(dst, key)
		dst = append(dst, '\t')
	}
	dst = appendNullable(dst, value)
	return append(dst, '\n')
}

func appendNullable(dst, b []byte) []byte {
	if b == nil {
		return append(dst, "null"...)
	}
	return append(dst, b...)
}

// producedLine is what `produce` prints on success.
func producedLine(n int, topic string) string {
	return fmt.Sprintf("Produced %d %s to topic %s.\n", n, plural(n, "record", "records"), topic)
}

// consumedLine is what `consume` prints on stderr when it stops, worded
// exactly as kafka-console-consumer does (no singular form).
func consumedLine(n int) string {
	return fmt.Sprintf("Processed a total of %d messages\n", n)
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}
