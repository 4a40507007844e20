-- Added to two-process-2022.4.sql by memory_test.go: the CUDA memory usage
-- table of an export made with nsys profile --cuda-memory-usage=true. The
-- CREATE TABLE statements are copied from a real nsys 2022.4.2.1
-- --lazy=false export (../shared/research/ddl-2022.4.sql); the rows are
-- hand-made (no GPU here to record real ones). bytes is the size for both
-- operations; memoryOperationType 0 allocates, 1 frees.
CREATE TABLE ENUM_CUDA_DEV_MEM_EVENT_OPER (
    -- CUDA device mem event operation labels

    id                          INTEGER   NOT NULL   PRIMARY KEY,      -- Enum numerical value
    name                        TEXT,                                  -- Enum symbol name
    label                       TEXT                                   -- Enum human name
);
CREATE TABLE CUDA_GPU_MEMORY_USAGE_EVENTS (
    start                       INTEGER   NOT NULL,                    -- Event start timestamp (ns).
    globalPid                   INTEGER   NOT NULL,                    -- Serialized GlobalId.
    deviceId                    INTEGER   NOT NULL,                    -- Device ID.
    contextId                   INTEGER   NOT NULL,                    -- Context ID.
    address                     INTEGER   NOT NULL,                    -- Virtual address of the allocation/deallocation.
    pc                          INTEGER   NOT NULL,                    -- Program counter of the allocation/deallocation.
    bytes                       INTEGER   NOT NULL,                    -- Number of bytes allocated/deallocated (B).
    memKind                     INTEGER   NOT NULL,                    -- REFERENCES ENUM_CUDA_MEM_KIND(id)
    memoryOperationType         INTEGER   NOT NULL,                    -- REFERENCES ENUM_CUDA_DEV_MEM_EVENT_OPER(id)
    name                        TEXT,                                  -- Variable name, if available.
    correlationId               INTEGER,                               -- REFERENCES CUPTI_ACTIVITY_KIND_RUNTIME(correlationId)
    localMemoryPoolAddress      INTEGER,                               -- Base address of the local memory pool used
    localMemoryPoolReleaseThreshold   INTEGER,                         -- Release threshold of the local memory pool used
    localMemoryPoolSize         INTEGER,                               -- Size of the local memory pool used
    localMemoryPoolUtilizedSize   INTEGER,                             -- Utilized size of the local memory pool used
    importedMemoryPoolAddress   INTEGER,                               -- Base address of the imported memory pool used
    importedMemoryPoolProcessId   INTEGER                              -- Process ID of the imported memory pool used
);
-- The enum as nsys 2022.4 writes it (../shared/research/enums-2022.4.tsv).
INSERT INTO ENUM_CUDA_DEV_MEM_EVENT_OPER VALUES
  (0, 'CUDA_DEV_MEM_EVENT_OPR_ALLOCATION', 'Allocation'),
  (1, 'CUDA_DEV_MEM_EVENT_OPR_DEALLOCATION', 'Deallocation');
-- Process 100 (steps [1000, 5000) and [6000, 9000)), device 0:
--   step 1: +1 MiB, +2 MiB, -1 MiB: running sum 1, 3, 2 MiB, peak 3 MiB
--   step 2: +4 MiB, -4 MiB, +512 B: peak 4 MiB
-- Process 200 (one step [1000, 4000)), device 1: +8 MiB.
-- Process 300 made no GPU work and has no ranges: its row is left out.
INSERT INTO CUDA_GPU_MEMORY_USAGE_EVENTS (start, globalPid, deviceId, contextId, address, pc, bytes, memKind, memoryOperationType) VALUES
  (1200, 281474976710656 + 100*16777216, 0, 1, 4096, 0, 1048576, 2, 0),
  (1400, 281474976710656 + 100*16777216, 0, 1, 8192, 0, 2097152, 2, 0),
  (3000, 281474976710656 + 100*16777216, 0, 1, 4096, 0, 1048576, 2, 1),
  (6500, 281474976710656 + 100*16777216, 0, 1, 65536, 0, 4194304, 2, 0),
  (7000, 281474976710656 + 100*16777216, 0, 1, 65536, 0, 4194304, 2, 1),
  (8000, 281474976710656 + 100*16777216, 0, 1, 131072, 0, 512, 2, 0),
  (1500, 281474976710656 + 200*16777216, 1, 1, 4096, 0, 8388608, 2, 0),
  (1500, 281474976710656 + 300*16777216, 0, 1, 4096, 0, 8388608, 2, 0);
