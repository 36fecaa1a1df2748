// Command file is the plugin binary of Sluice's file connectors, which take
// the place of Apache Kafka's FileStreamSource and FileStreamSink (package
// org.apache.kafka.connect.file) and accept the same configuration:
//
//   - FileStreamSourceConnector reads a text file (or standard input) line by
//     line and produces each line as a STRING value to one topic. It records
//     {"filename": path} / {"position": byte offset after the line} as its
//     source partition and offset, resumes from the stored position after a
//     restart, and follows the file as it grows. A file truncated or
//     replaced (log rotation) while the task runs is read again from its
//     start; Kafka's task keeps reading the old file.
//   - FileStreamSinkConnector appends the value of every record it is given,
//     one per line, to a file (or standard output) and makes the file
//     durable before the worker commits offsets.
//
// The binary serves both classes under Kafka's class names, so connector
// configurations written for Kafka Connect work unchanged.
package main
