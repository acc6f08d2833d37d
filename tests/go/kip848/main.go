// franz-go (kgo) against a broker: a consumer group of two clients reading a topic once between
// them. Mode "defaults": kgo's default group settings, which (franz-go v1.22) keep the classic
// protocol even when the broker advertises ConsumerGroupHeartbeat; mode "848": the opt-in
// kgo.ServerSideBalancer() with the range balancer, the KIP-848 protocol.
//
//	go run . 127.0.0.1:9092 topic group defaults|848
//
// Prints "OK read=<n> distinct=<n>" or "FAIL <error>"; exit status 0 or 1.
package main

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

const records = 60

func main() {
	if err := run(os.Args[1], os.Args[2], os.Args[3], os.Args[4] == "848"); err != nil {
		fmt.Println("FAIL", err)
		os.Exit(1)
	}
}

func run(bootstrap, topic, group string, kip848 bool) error {
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	p, err := kgo.NewClient(kgo.SeedBrokers(bootstrap), kgo.AllowAutoTopicCreation())
	if err != nil {
		return err
	}
	for i := 0; i < records; i++ {
		p.Produce(ctx, &kgo.Record{Topic: topic, Value: []byte(strconv.Itoa(i))}, nil)
	}
	if err := p.Flush(ctx); err != nil {
		return err
	}
	p.Close()

	var mu sync.Mutex
	seen := map[string]int{}
	total := 0
	var wg sync.WaitGroup
	clients := make([]*kgo.Client, 2)
	for i := range clients {
		opts := []kgo.Opt{kgo.SeedBrokers(bootstrap), kgo.ConsumerGroup(group), kgo.ConsumeTopics(topic),
			kgo.ConsumeResetOffset(kgo.NewOffset().AtStart())}
		if kip848 {
			opts = append(opts, kgo.ServerSideBalancer(), kgo.Balancers(kgo.RangeBalancer()))
		}
		c, err := kgo.NewClient(opts...)
		if err != nil {
			return err
		}
		clients[i] = c
	}
	for _, c := range clients {
		wg.Add(1)
		go func(c *kgo.Client) {
			defer wg.Done()
			for {
				mu.Lock()
				done := total >= records
				mu.Unlock()
				if done || ctx.Err() != nil {
					return
				}
				poll, pcancel := context.WithTimeout(ctx, 500*time.Millisecond)
				fetches := c.PollFetches(poll)
				pcancel()
				fetches.EachRecord(func(r *kgo.Record) {
					mu.Lock()
					seen[string(r.Value)]++
					total++
					mu.Unlock()
				})
				if err := c.CommitUncommittedOffsets(ctx); err != nil && ctx.Err() == nil {
					fmt.Fprintln(os.Stderr, "commit:", err)
				}
			}
		}(c)
	}
	wg.Wait()
	for _, c := range clients {
		c.Close() // leaves the group
	}
	if ctx.Err() != nil {
		return fmt.Errorf("read %d of %d records: %v", total, records, ctx.Err())
	}
	fmt.Printf("OK read=%d distinct=%d\n", total, len(seen))
	return nil
}
