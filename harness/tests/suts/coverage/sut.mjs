// A SUT that offers the coverage extension through the shared Node shim (harness/runtimes/lib/
// shim.mjs and shim-coverage.mjs): `neutralize_text` prefixes lines that start with `MEDIA:`.

import { serve } from "../../../runtimes/lib/shim.mjs";
import { neutralize } from "./neutralize.mjs";

serve("coverage sut", { neutralize_text: (input) => ({ text: neutralize(input.text) }) });
