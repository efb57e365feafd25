import { MemoryStore } from "../../shared/store/memory-store.ts";
import { runStoreSuite } from "../support/store-suite.ts";

runStoreSuite("MemoryStore", async () => new MemoryStore());
