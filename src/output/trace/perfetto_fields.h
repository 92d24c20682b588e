// Field numbers of the Perfetto trace protos that gpuleak writes, from Perfetto's
// protos/perfetto/trace/perfetto_trace.proto (a copy for tests: tests/unit/trace/perfetto_schema/). Protobuf
// field numbers never change meaning, so these hold across Perfetto versions.
#pragma once

#include <cstdint>

namespace gpuleak::output::trace::pf {

// message Trace
inline constexpr uint32_t kTracePacket = 1;  // repeated TracePacket packet

// message TracePacket
inline constexpr uint32_t kPacketTimestamp = 8;             // uint64, ns (trace clock)
inline constexpr uint32_t kPacketTrustedSequenceId = 10;    // uint32 trusted_packet_sequence_id
inline constexpr uint32_t kPacketTrackEvent = 11;           // TrackEvent
inline constexpr uint32_t kPacketInternedData = 12;         // InternedData
inline constexpr uint32_t kPacketSequenceFlags = 13;        // uint32
inline constexpr uint32_t kPacketTrackDescriptor = 60;      // TrackDescriptor
inline constexpr uint32_t kSeqIncrementalStateCleared = 1;  // TracePacket.SequenceFlags
inline constexpr uint32_t kSeqNeedsIncrementalState = 2;

// message InternedData: repeated entries, each {iid = 1, name/str = 2}
inline constexpr uint32_t kInternedEventCategories = 1;          // EventCategory
inline constexpr uint32_t kInternedEventNames = 2;               // EventName
inline constexpr uint32_t kInternedAnnotationNames = 3;          // DebugAnnotationName
inline constexpr uint32_t kInternedAnnotationStringValues = 29;  // InternedString
inline constexpr uint32_t kInternedIid = 1;
inline constexpr uint32_t kInternedString = 2;

// message TrackDescriptor
inline constexpr uint32_t kTrackUuid = 1;
inline constexpr uint32_t kTrackName = 2;
inline constexpr uint32_t kTrackProcess = 3;  // ProcessDescriptor
inline constexpr uint32_t kTrackThread = 4;   // ThreadDescriptor
inline constexpr uint32_t kTrackParentUuid = 5;
inline constexpr uint32_t kTrackCounter = 8;  // CounterDescriptor

// message ProcessDescriptor
inline constexpr uint32_t kProcessPid = 1;
inline constexpr uint32_t kProcessCmdline = 2;
inline constexpr uint32_t kProcessName = 6;
inline constexpr uint32_t kProcessLabels = 8;

// message ThreadDescriptor
inline constexpr uint32_t kThreadPid = 1;
inline constexpr uint32_t kThreadTid = 2;
inline constexpr uint32_t kThreadName = 5;

// message CounterDescriptor
inline constexpr uint32_t kCounterUnit = 3;           // enum Unit
inline constexpr uint32_t kCounterUnitSizeBytes = 3;  // UNIT_SIZE_BYTES
inline constexpr uint32_t kCounterYAxisShareKey = 7;

// message TrackEvent
inline constexpr uint32_t kEventCategoryIids = 3;      // repeated uint64
inline constexpr uint32_t kEventDebugAnnotations = 4;  // repeated DebugAnnotation
inline constexpr uint32_t kEventType = 9;              // enum Type
inline constexpr uint32_t kEventNameIid = 10;
inline constexpr uint32_t kEventTrackUuid = 11;
inline constexpr uint32_t kEventCategories = 22;  // repeated string
inline constexpr uint32_t kEventName = 23;
inline constexpr uint32_t kEventCounterValue = 30;        // int64
inline constexpr uint32_t kEventFlowIds = 47;             // repeated fixed64 flow_ids
inline constexpr uint32_t kEventTerminatingFlowIds = 48;  // repeated fixed64 terminating_flow_ids
inline constexpr uint32_t kTypeSliceBegin = 1;
inline constexpr uint32_t kTypeSliceEnd = 2;
inline constexpr uint32_t kTypeInstant = 3;
inline constexpr uint32_t kTypeCounter = 4;

// message DebugAnnotation
inline constexpr uint32_t kAnnotationNameIid = 1;
inline constexpr uint32_t kAnnotationBool = 2;
inline constexpr uint32_t kAnnotationUint = 3;
inline constexpr uint32_t kAnnotationInt = 4;
inline constexpr uint32_t kAnnotationDouble = 5;
inline constexpr uint32_t kAnnotationString = 6;
inline constexpr uint32_t kAnnotationPointer = 7;  // uint64, shown in hex
inline constexpr uint32_t kAnnotationName = 10;
inline constexpr uint32_t kAnnotationDictEntries = 11;  // repeated DebugAnnotation
inline constexpr uint32_t kAnnotationArrayValues = 12;  // repeated DebugAnnotation
inline constexpr uint32_t kAnnotationStringIid = 17;

}  // namespace gpuleak::output::trace::pf
