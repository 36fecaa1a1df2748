package wire

import (
	"context"
	"net"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/test/bufconn"
)

// A plugin's server serves calls on a few reused goroutines; with more
// calls in progress than those (a Poll waiting for data, a Commit, a
// Stop), a further call is still served at once rather than queued.
func TestServerCallsBeyondTheWorkersAreServed(t *testing.T) {
	lis := bufconn.Listen(1 << 20)
	gs := grpc.NewServer(ServerOptions()...)
	hs := health.NewServer()
	healthpb.RegisterHealthServer(gs, hs)
	go func() { _ = gs.Serve(lis) }()
	defer gs.Stop()
	conn, err := grpc.NewClient("passthrough:///bufnet",
		grpc.WithContextDialer(func(ctx context.Context, _ string) (net.Conn, error) { return lis.DialContext(ctx) }),
		grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	client := healthpb.NewHealthClient(conn)

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	// Each Watch keeps its handler (and so a worker) busy until ctx ends,
	// once it has sent the current status.
	for i := range streamWorkers + 2 {
		w, err := client.Watch(ctx, &healthpb.HealthCheckRequest{})
		if err != nil {
			t.Fatalf("watch %d: %v", i, err)
		}
		if _, err := w.Recv(); err != nil {
			t.Fatalf("watch %d: first status: %v", i, err)
		}
	}
	cctx, ccancel := context.WithTimeout(ctx, 2*time.Second)
	defer ccancel()
	resp, err := client.Check(cctx, &healthpb.HealthCheckRequest{})
	if err != nil {
		t.Fatalf("a call with every worker busy: %v", err)
	}
	if resp.GetStatus() != healthpb.HealthCheckResponse_SERVING {
		t.Fatalf("status %v", resp.GetStatus())
	}
}
