-- A hand-made export in the nsys 2022.4.2.1 schema (3.0.0), CREATE TABLE
-- statements copied from a real --lazy=false export
-- (../shared/research/ddl-2022.4.sql), ENUM rows from the same export
-- (enums-2022.4.tsv). One process, pid 300, main thread tid 301:
-- globalPid = 1<<48 | 300<<24 = 281480009875456, globalTid = globalPid + 301 = 281480009875757.
--
-- It calls the per-thread default stream variants of the CUDA API (_ptsz,
-- _ptds) and the driver API's _v2 functions, with version suffixes as
-- CUPTI names them. Two train_step NVTX ranges; times in ns:
--
-- step 1, host [1000, 10000)
--   cudaLaunchKernel_ptsz_v7000     [1100, 1300)  corr 1 -> kernel k1 [1400, 3400)
--   cudaMemcpyAsync_ptsz_v7000      [1500, 1600)  corr 2 -> memcpy DtoH 4 B device->pageable [3500, 3600)
--   cudaStreamSynchronize_ptsz_v7000 [1700, 3700) corr 3 (SYNCHRONIZATION [1710, 3650), stream sync)
--   cudaMemcpy_ptds_v7000           [4000, 4500)  corr 4 -> memcpy HtoD 1024 B pageable->device [4100, 4400)
--   cuLaunchKernel_ptsz             [5000, 5200)  corr 5 -> kernel k2 [5300, 6300)
--   cudaEventRecord_ptsz_v7000      [6000, 6050)  corr 6 (neither sync nor launch)
-- step 2, host [10000, 20000)
--   cudaLaunchKernel_v7000          [10100, 10300) corr 7 -> kernel k3 [10400, 12400)
--   cuStreamSynchronize_ptsz        [10500, 12500) corr 8 (SYNCHRONIZATION [10510, 12450), stream sync)
--   cuMemcpyDtoH_v2_ptds            [13000, 13400) corr 9 -> memcpy DtoH 8 B device->pinned [13100, 13300)
--   cudaStreamGetCaptureInfo_v2_ptsz_v11030 [14000, 14010) corr 10 (neither)
--
-- Worked out by hand (DESIGN.md definitions), checked in nsys_test.go:
--   step 1: window [1000, 10000) (s1 = max(h1 10000, last op end 6300)), step time 9000 ns;
--     kernels 2; sync calls 2 (cudaStreamSynchronize_ptsz, cudaMemcpy_ptds),
--     sync time (3700-1700) + (4500-4000) = 2500; launches 2
--     (cudaLaunchKernel_ptsz, cuLaunchKernel_ptsz), launch overhead median(200, 200) = 200;
--     D2H 1 copy, 4 B, 100 ns, 1 pageable; H2D 1 copy, 1024 B, 300 ns, 1 pageable;
--     GPU busy 2000 + 100 + 300 + 1000 = 3400.
--   step 2: window [10000, 20000), step time 10000 ns; kernels 1; sync calls 2
--     (cuStreamSynchronize_ptsz, cuMemcpyDtoH_v2_ptds), sync time 2000 + 400 = 2400;
--     launches 1, overhead 200; D2H 1 copy, 8 B, 200 ns, 0 pageable; GPU busy 2000 + 200 = 2200.
-- Before per-thread-stream names were normalized, cudaStreamSynchronize_ptsz and
-- cuStreamSynchronize_ptsz were not syncs: 1 sync call per step (500 and 400 ns).

CREATE TABLE StringIds (
    -- Consolidation of repetitive string values.

    id                          INTEGER   NOT NULL   PRIMARY KEY,      -- ID reference value.
    value                       TEXT      NOT NULL                     -- String value.
);
CREATE TABLE EXPORT_META_DATA (
    -- information about nsys export process

    name                        TEXT      NOT NULL,                    -- Name of export meta-data record
    value                       TEXT                                   -- Value of export meta-data record
);
CREATE TABLE CUPTI_ACTIVITY_KIND_KERNEL (
    start                       INTEGER   NOT NULL,                    -- Event start timestamp (ns).
    end                         INTEGER   NOT NULL,                    -- Event end timestamp (ns).
    deviceId                    INTEGER   NOT NULL,                    -- Device ID.
    contextId                   INTEGER   NOT NULL,                    -- Context ID.
    streamId                    INTEGER   NOT NULL,                    -- Stream ID.
    correlationId               INTEGER,                               -- REFERENCES CUPTI_ACTIVITY_KIND_RUNTIME(correlationId)
    globalPid                   INTEGER,                               -- Serialized GlobalId.
    demangledName               INTEGER   NOT NULL,                    -- REFERENCES StringIds(id) -- Kernel function name w/ templates
    shortName                   INTEGER   NOT NULL,                    -- REFERENCES StringIds(id) -- Base kernel function name
    mangledName                 INTEGER,                               -- REFERENCES StringIds(id) -- Raw C++ mangled kernel function name
    launchType                  INTEGER,                               -- REFERENCES ENUM_CUDA_KRENEL_LAUNCH_TYPE(id)
    cacheConfig                 INTEGER,                               -- REFERENCES ENUM_CUDA_FUNC_CACHE_CONFIG(id)
    registersPerThread          INTEGER   NOT NULL,                    -- Number of registers required for each thread executing the kernel.
    gridX                       INTEGER   NOT NULL,                    -- X-dimension grid size.
    gridY                       INTEGER   NOT NULL,                    -- Y-dimension grid size.
    gridZ                       INTEGER   NOT NULL,                    -- Z-dimension grid size.
    blockX                      INTEGER   NOT NULL,                    -- X-dimension block size.
    blockY                      INTEGER   NOT NULL,                    -- Y-dimension block size.
    blockZ                      INTEGER   NOT NULL,                    -- Z-dimension block size.
    staticSharedMemory          INTEGER   NOT NULL,                    -- Static shared memory allocated for the kernel (B).
    dynamicSharedMemory         INTEGER   NOT NULL,                    -- Dynamic shared memory reserved for the kernel (B).
    localMemoryPerThread        INTEGER   NOT NULL,                    -- Amount of local memory reserved for each thread (B).
    localMemoryTotal            INTEGER   NOT NULL,                    -- Total amount of local memory reserved for the kernel (B).
    gridId                      INTEGER   NOT NULL,                    -- Unique grid ID of the kernel assigned at runtime.
    sharedMemoryExecuted        INTEGER,                               -- Shared memory size set by the driver.
    graphNodeId                 INTEGER,                               -- REFERENCES CUDA_GRAPH_EVENTS(graphNodeId)
    sharedMemoryLimitConfig     INTEGER                                -- REFERENCES ENUM_CUDA_SHARED_MEM_LIMIT_CONFIG(id)
);
CREATE TABLE CUPTI_ACTIVITY_KIND_MEMCPY (
    start                       INTEGER   NOT NULL,                    -- Event start timestamp (ns).
    end                         INTEGER   NOT NULL,                    -- Event end timestamp (ns).
    deviceId                    INTEGER   NOT NULL,                    -- Device ID.
    contextId                   INTEGER   NOT NULL,                    -- Context ID.
    streamId                    INTEGER   NOT NULL,                    -- Stream ID.
    correlationId               INTEGER,                               -- REFERENCES CUPTI_ACTIVITY_KIND_RUNTIME(correlationId)
    globalPid                   INTEGER,                               -- Serialized GlobalId.
    bytes                       INTEGER   NOT NULL,                    -- Number of bytes transferred (B).
    copyKind                    INTEGER   NOT NULL,                    -- REFERENCES ENUM_CUDA_MEMCPY_OPER(id)
    deprecatedSrcId             INTEGER,                               -- Deprecated, use srcDeviceId instead.
    srcKind                     INTEGER,                               -- REFERENCES ENUM_CUDA_MEM_KIND(id)
    dstKind                     INTEGER,                               -- REFERENCES ENUM_CUDA_MEM_KIND(id)
    srcDeviceId                 INTEGER,                               -- Source device ID.
    srcContextId                INTEGER,                               -- Source context ID.
    dstDeviceId                 INTEGER,                               -- Destination device ID.
    dstContextId                INTEGER,                               -- Destination context ID.
    migrationCause              INTEGER,                               -- REFERENCES ENUM_CUDA_UNIF_MEM_MIGRATION(id)
    graphNodeId                 INTEGER,                               -- REFERENCES CUDA_GRAPH_EVENTS(graphNodeId)
    virtualAddress              INTEGER                                -- Virtual base address of the page/s being transferred.
);
CREATE TABLE CUPTI_ACTIVITY_KIND_RUNTIME (
    start                       INTEGER   NOT NULL,                    -- Event start timestamp (ns).
    end                         INTEGER   NOT NULL,                    -- Event end timestamp (ns).
    eventClass                  INTEGER   NOT NULL,                    -- REFERENCES ENUM_NSYS_EVENT_CLASS(id)
    globalTid                   INTEGER,                               -- Serialized GlobalId.
    correlationId               INTEGER,                               -- ID used to identify events that this function call has triggered.
    nameId                      INTEGER   NOT NULL,                    -- REFERENCES StringIds(id) -- Function name
    returnValue                 INTEGER   NOT NULL,                    -- Return value of the function call.
    callchainId                 INTEGER                                -- REFERENCES CUDA_CALLCHAINS(id)
);
CREATE TABLE NVTX_EVENTS (
    start                       INTEGER   NOT NULL,                    -- Event start timestamp (ns).
    end                         INTEGER,                               -- Event end timestamp (ns).
    eventType                   INTEGER   NOT NULL,                    -- REFERENCES ENUM_NSYS_EVENT_TYPE(id)
    rangeId                     INTEGER,                               -- Correlation ID returned from a nvtxRangeStart call.
    category                    INTEGER,                               -- User-controlled ID that can be used to group events.
    color                       INTEGER,                               -- Encoded ARGB color value.
    text                        TEXT,                                  -- Optional text message for non registered strings.
    globalTid                   INTEGER,                               -- Serialized GlobalId.
    endGlobalTid                INTEGER,                               -- Serialized GlobalId.
    textId                      INTEGER,                               -- REFERENCES StringIds(id) -- Registered NVTX domain
    domainId                    INTEGER,                               -- User-controlled ID that can be used to group events.
    uint64Value                 INTEGER,                               -- One of possible payload value union members.
    int64Value                  INTEGER,                               -- One of possible payload value union members.
    doubleValue                 REAL,                                  -- One of possible payload value union members.
    uint32Value                 INTEGER,                               -- One of possible payload value union members.
    int32Value                  INTEGER,                               -- One of possible payload value union members.
    floatValue                  REAL,                                  -- One of possible payload value union members.
    jsonTextId                  INTEGER,                               -- One of possible payload value union members.
    jsonText                    TEXT                                   -- One of possible payload value union members.
);
CREATE TABLE CUPTI_ACTIVITY_KIND_SYNCHRONIZATION (
    start                       INTEGER   NOT NULL,                    -- Event start timestamp (ns).
    end                         INTEGER   NOT NULL,                    -- Event end timestamp (ns).
    deviceId                    INTEGER   NOT NULL,                    -- Device ID.
    contextId                   INTEGER   NOT NULL,                    -- Context ID.
    streamId                    INTEGER   NOT NULL,                    -- Stream ID.
    correlationId               INTEGER,                               -- Correlation ID of the synchronization API to which this result is associated.
    globalPid                   INTEGER,                               -- Serialized GlobalId.
    syncType                    INTEGER   NOT NULL,                    -- REFERENCES ENUM_CUPTI_SYNC_TYPE(id)
    eventId                     INTEGER   NOT NULL                     -- Event ID for which the synchronization API is called.
);
CREATE TABLE ENUM_CUDA_MEMCPY_OPER (
    -- CUDA memcpy operation labels

    id                          INTEGER   NOT NULL   PRIMARY KEY,      -- Enum numerical value
    name                        TEXT,                                  -- Enum symbol name
    label                       TEXT                                   -- Enum human name
);
CREATE TABLE ENUM_CUDA_MEM_KIND (
    -- CUDA memory kind labels

    id                          INTEGER   NOT NULL   PRIMARY KEY,      -- Enum numerical value
    name                        TEXT,                                  -- Enum symbol name
    label                       TEXT                                   -- Enum human name
);

INSERT INTO StringIds VALUES (1, 'k1_gemm'), (2, 'k2_relu'), (3, 'k3_softmax'), (4, 'cudaLaunchKernel_ptsz_v7000'), (5, 'cudaMemcpyAsync_ptsz_v7000'), (6, 'cudaStreamSynchronize_ptsz_v7000'), (7, 'cudaMemcpy_ptds_v7000'), (8, 'cuLaunchKernel_ptsz'), (9, 'cudaEventRecord_ptsz_v7000'), (10, 'cudaLaunchKernel_v7000'), (11, 'cuStreamSynchronize_ptsz'), (12, 'cuMemcpyDtoH_v2_ptds'), (13, 'cudaStreamGetCaptureInfo_v2_ptsz_v11030');
INSERT INTO EXPORT_META_DATA VALUES ('EXPORT_PRODUCT_VERSION', '2022.4.2.1'), ('EXPORT_SCHEMA_VERSION', '3.0.0');
-- start, end, eventClass (0 runtime, 1 driver), globalTid, correlationId, nameId, returnValue, callchainId
INSERT INTO CUPTI_ACTIVITY_KIND_RUNTIME VALUES
  (1100, 1300, 0, 281480009875757, 1, 4, 0, NULL),
  (1500, 1600, 0, 281480009875757, 2, 5, 0, NULL),
  (1700, 3700, 0, 281480009875757, 3, 6, 0, NULL),
  (4000, 4500, 0, 281480009875757, 4, 7, 0, NULL),
  (5000, 5200, 1, 281480009875757, 5, 8, 0, NULL),
  (6000, 6050, 0, 281480009875757, 6, 9, 0, NULL),
  (10100, 10300, 0, 281480009875757, 7, 10, 0, NULL),
  (10500, 12500, 1, 281480009875757, 8, 11, 0, NULL),
  (13000, 13400, 1, 281480009875757, 9, 12, 0, NULL),
  (14000, 14010, 0, 281480009875757, 10, 13, 0, NULL);
-- start, end, deviceId, contextId, streamId, correlationId, globalPid, demangledName, shortName, mangledName, launchType, cacheConfig, registersPerThread, grid, block, shared/local memory, gridId, sharedMemoryExecuted, graphNodeId, sharedMemoryLimitConfig
INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL VALUES
  (1400, 3400, 0, 1, 7, 1, 281480009875456, 1, 1, NULL, 1, 0, 32, 1, 1, 1, 128, 1, 1, 0, 0, 0, 0, 1, 0, NULL, NULL),
  (5300, 6300, 0, 1, 7, 5, 281480009875456, 2, 2, NULL, 1, 0, 32, 1, 1, 1, 128, 1, 1, 0, 0, 0, 0, 5, 0, NULL, NULL),
  (10400, 12400, 0, 1, 7, 7, 281480009875456, 3, 3, NULL, 1, 0, 32, 1, 1, 1, 128, 1, 1, 0, 0, 0, 0, 7, 0, NULL, NULL);
-- start, end, deviceId, contextId, streamId, correlationId, globalPid, bytes, copyKind, deprecatedSrcId, srcKind, dstKind, ...
INSERT INTO CUPTI_ACTIVITY_KIND_MEMCPY VALUES
  (3500, 3600, 0, 1, 7, 2, 281480009875456, 4, 2, NULL, 2, 0, 0, 1, 0, 1, NULL, NULL, NULL),
  (4100, 4400, 0, 1, 7, 4, 281480009875456, 1024, 1, NULL, 0, 2, 0, 1, 0, 1, NULL, NULL, NULL),
  (13100, 13300, 0, 1, 7, 9, 281480009875456, 8, 2, NULL, 2, 1, 0, 1, 0, 1, NULL, NULL, NULL);
-- start, end, deviceId, contextId, streamId, correlationId, globalPid, syncType (3 stream sync), eventId
INSERT INTO CUPTI_ACTIVITY_KIND_SYNCHRONIZATION VALUES
  (1710, 3650, 0, 1, 7, 3, 281480009875456, 3, 0),
  (10510, 12450, 0, 1, 7, 8, 281480009875456, 3, 0);
-- start, end, eventType (59 push/pop), rangeId, category, color, text, globalTid, ...
INSERT INTO NVTX_EVENTS (start, "end", eventType, text, globalTid) VALUES
  (1000, 10000, 59, 'train_step', 281480009875757),
  (10000, 20000, 59, 'train_step', 281480009875757);
INSERT INTO ENUM_CUDA_MEMCPY_OPER VALUES (0, 'CUDA_MEMCPY_KIND_UNKNOWN', 'Unknown'), (1, 'CUDA_MEMCPY_KIND_HTOD', 'Host-to-Device'), (2, 'CUDA_MEMCPY_KIND_DTOH', 'Device-to-Host'), (3, 'CUDA_MEMCPY_KIND_HTOA', 'Host-to-Array'), (4, 'CUDA_MEMCPY_KIND_ATOH', 'Array-to-Host'), (5, 'CUDA_MEMCPY_KIND_ATOA', 'Array-to-Array'), (6, 'CUDA_MEMCPY_KIND_ATOD', 'Array-to-Device'), (7, 'CUDA_MEMCPY_KIND_DTOA', 'Device-to-Array'), (8, 'CUDA_MEMCPY_KIND_DTOD', 'Device-to-Device'), (9, 'CUDA_MEMCPY_KIND_HTOH', 'Host-to-Host'), (10, 'CUDA_MEMCPY_KIND_PTOP', 'Peer-to-Peer'), (11, 'CUDA_MEMCPY_KIND_UVM_HTOD', 'Unified Host-to-Device'), (12, 'CUDA_MEMCPY_KIND_UVM_DTOH', 'Unified Device-to-Host'), (13, 'CUDA_MEMCPY_KIND_UVM_DTOD', 'Unified Device-to-Device');
INSERT INTO ENUM_CUDA_MEM_KIND VALUES (0, 'CUDA_MEMOPR_MEMORY_KIND_PAGEABLE', 'Pageable'), (1, 'CUDA_MEMOPR_MEMORY_KIND_PINNED', 'Pinned'), (2, 'CUDA_MEMOPR_MEMORY_KIND_DEVICE', 'Device'), (3, 'CUDA_MEMOPR_MEMORY_KIND_ARRAY', 'Array'), (4, 'CUDA_MEMOPR_MEMORY_KIND_MANAGED', 'Managed'), (5, 'CUDA_MEMOPR_MEMORY_KIND_DEVICE_STATIC', 'Device Static'), (6, 'CUDA_MEMOPR_MEMORY_KIND_MANAGED_STATIC', 'Managed Static'), (7, 'CUDA_MEMOPR_MEMORY_KIND_UNKNOWN', 'Unknown');
