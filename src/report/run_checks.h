#pragma once
// What the report's tables may hold, checked against run.json before anything is drawn:
// a hand-edited or mixed-up run directory (a head outside the model, a duplicated row, an
// N outside the run's grid, a share above 1) is an InputError naming file, line and
// column, never a figure that silently shows it (docs/report.md).
#include "report/run_data.h"

namespace attngeom::report {

// Throws InputError for the first violation found.
void check_run_tables(const RunData& run);

}  // namespace attngeom::report
