// The `dataflux` command: ls, du, stat, cat, cp, mv, rm, pack, cleanup on gs://, s3:// and local
// paths alike (tools/dataflux_main.cc is its main()).
#ifndef DATAFLUX_SRC_CLI_CLI_H_
#define DATAFLUX_SRC_CLI_CLI_H_

namespace dataflux::cli {

// Parses the command line and runs the subcommand. Returns the exit code: 0 done, 1 some
// operation failed (each named on stderr), 2 usage (the message says what was wrong).
int run(int argc, char** argv);

}  // namespace dataflux::cli

#endif  // DATAFLUX_SRC_CLI_CLI_H_
