// The gdp subcommands. Each takes the arguments after its name and returns the exit code
// (0 ok, 1 bad input, 2 bad usage); errors are thrown as InputError / UsageError and turned
// into messages and exit codes by main.
#pragma once

namespace gdp::cli {

int cmd_info(int argc, char** argv);       // cli/cmd_info.cpp
int cmd_convert(int argc, char** argv);    // cli/cmd_convert.cpp
int cmd_cluster(int argc, char** argv);    // cli/cmd_cluster.cpp
int cmd_simulate(int argc, char** argv);   // cli/cmd_simulate.cpp
int cmd_gen(int argc, char** argv);        // cli/cmd_gen.cpp (datasets)
int cmd_place(int argc, char** argv);      // cli/cmd_place.cpp (place/ registry)
int cmd_compare(int argc, char** argv);    // cli/cmd_compare.cpp: the README's main job
int cmd_train(int argc, char** argv);      // cli/cmd_train.cpp (rl/)
int cmd_suite(int argc, char** argv);      // cli/cmd_suite.cpp: batch runs (eval/suite_run.h)
int cmd_calibrate(int argc, char** argv);  // cli/cmd_calibrate.cpp (calib/): fitted profiles
int cmd_validate(int argc, char** argv);   // cli/cmd_validate.cpp: real run vs simulator

}  // namespace gdp::cli
