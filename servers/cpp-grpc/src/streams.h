// protobench.v1.Streams' three streaming methods (EchoStream, Subscribe,
// Upload), each call a state machine on its worker's completion queue (its
// unary Poll is one of server.cc's unary methods). Every method is raw
// (ByteBuffer in and out) so that an undecodable message is answered
// INVALID_ARGUMENT, as for the unary methods.
#ifndef PROTOBENCH_CPP_GRPC_STREAMS_H_
#define PROTOBENCH_CPP_GRPC_STREAMS_H_

#include "call.h"
#include "protobench/v1/stream.grpc.pb.h"

namespace pbserver {

using StreamsService = pb::Streams::WithRawMethod_EchoStream<pb::Streams::WithRawMethod_Subscribe<
    pb::Streams::WithRawMethod_Upload<pb::Streams::WithRawMethod_Poll<pb::Streams::Service>>>>;

// Requests one call of each streaming method on worker's queue (each call,
// once it arrives, requests the next).
void RequestStreams(App& app, StreamsService& service, Worker& worker);

}  // namespace pbserver

#endif  // PROTOBENCH_CPP_GRPC_STREAMS_H_
