// dataflux: the command-line tool for the chores around a bucket (torch-free, on the engine
// layer): ls, du, stat, cat, cp, mv, rm, cleanup on gs://, s3:// and local paths alike.
// `dataflux help` and `dataflux help COMMAND` describe each; src/cli/ holds the commands.
//
// The usual environment (STORAGE_EMULATOR_HOST, GOOGLE_APPLICATION_CREDENTIALS, AWS_*) applies.
#include "cli/cli.h"

int main(int argc, char** argv) { return dataflux::cli::run(argc, argv); }
