package hooksrv

// A Go encoder for tests only: it lets the socket tests craft frames with
// this process's pid. TestEncodeMatchesGolden proves it writes the same bytes
// as the C encoder, so it cannot drift from the specification unnoticed.

func encode(f Frame) []byte {
	var body []byte
	switch b := f.Body.(type) {
	case *Hello:
		body = make([]byte, helloSize)
		le.PutUint32(body[helloPID:], b.PID)
		le.PutUint32(body[helloPageSize:], b.PageSize)
		le.PutUint64(body[helloMonotonic:], b.MonotonicNs)
		le.PutUint16(body[helloByteArrayBase:], b.ByteArrayBase)
		le.PutUint16(body[helloLongArrayBase:], b.LongArrayBase)
		le.PutUint16(body[helloRefSize:], b.RefSize)
		body[helloWalk] = byte(b.Walk)
		le.PutUint16(body[helloAppIDLen:], uint16(len(b.AppID)))
		le.PutUint16(body[helloExecutorIDLen:], uint16(len(b.ExecutorID)))
		body = append(append(body, b.AppID...), b.ExecutorID...)
	case *Register:
		body = make([]byte, registerSize)
		le.PutUint64(body[registerBlockID:], b.BlockID)
		le.PutUint64(body[registerVaddr:], b.Vaddr)
		le.PutUint64(body[registerLength:], b.Length)
		le.PutUint32(body[registerPID:], b.PID)
		le.PutUint32(body[registerRDDID:], uint32(b.RDDID))
		le.PutUint32(body[registerPartition:], uint32(b.Partition))
		body[registerMode] = byte(b.Mode)
		body[registerLocation] = byte(b.Location)
		le.PutUint16(body[registerNameLen:], uint16(len(b.Name)))
		body[registerKind] = byte(b.Kind)
		body[registerFlags] = b.Flags
		le.PutUint32(body[registerChunk:], b.Chunk)
		le.PutUint32(body[registerChunks:], b.Chunks)
		le.PutUint32(body[registerStageID:], uint32(b.StageID))
		le.PutUint32(body[registerStageAtt:], uint32(b.StageAttempt))
		le.PutUint64(body[registerTaskAtt:], uint64(b.TaskAttemptID))
		le.PutUint16(body[registerLabelLen:], uint16(len(b.Label)))
		le.PutUint32(body[registerColumn:], uint32(b.Column))
		le.PutUint64(body[registerSparkBytes:], b.SparkBytes)
		body = append(append(body, b.Name...), b.Label...)
	case *Move:
		body = make([]byte, moveSize)
		le.PutUint64(body[moveBlockID:], b.BlockID)
		le.PutUint64(body[moveVaddr:], b.Vaddr)
		le.PutUint64(body[moveLength:], b.Length)
		le.PutUint32(body[movePID:], b.PID)
		le.PutUint32(body[moveGCEpoch:], b.GCEpoch)
	case *Access:
		body = make([]byte, accessSize)
		le.PutUint64(body[accessBlockID:], b.BlockID)
		le.PutUint64(body[accessOffset:], b.Offset)
		le.PutUint64(body[accessLength:], b.Length)
		body[accessKind] = byte(b.Kind)
	case *Free:
		body = make([]byte, freeSize)
		le.PutUint64(body[freeBlockID:], b.BlockID)
		body[freeReason] = byte(b.Reason)
	case *Dropped:
		body = make([]byte, droppedSize)
		le.PutUint64(body[droppedDropped:], b.Dropped)
		le.PutUint64(body[droppedSent:], b.Sent)
	case *WalkPart:
		body = make([]byte, walkSize, walkSize+len(b.Extents)*extentSize)
		le.PutUint64(body[walkBlockID:], b.BlockID)
		le.PutUint32(body[walkGCEpoch:], b.GCEpoch)
		le.PutUint32(body[walkSeq:], b.Seq)
		le.PutUint16(body[walkPart:], b.Part)
		le.PutUint16(body[walkParts:], b.Parts)
		le.PutUint16(body[walkCount:], uint16(len(b.Extents)))
		body[walkState] = byte(b.State)
		le.PutUint64(body[walkObjects:], b.Objects)
		le.PutUint64(body[walkBytes:], b.Bytes)
		le.PutUint64(body[walkSharedObjects:], b.SharedObjects)
		le.PutUint64(body[walkSharedBytes:], b.SharedBytes)
		le.PutUint64(body[walkOpaqueObjects:], b.OpaqueObjects)
		le.PutUint32(body[walkExtents:], b.TotalExtents)
		for _, e := range b.Extents {
			body = le.AppendUint64(le.AppendUint64(body, e.Vaddr), e.Length)
		}
	case *GC:
		body = make([]byte, epochSize)
		le.PutUint32(body[epochGCEpoch:], b.GCEpoch)
	case *Checked:
		body = make([]byte, epochSize)
		le.PutUint32(body[epochGCEpoch:], b.GCEpoch)
	case *Off:
		body = make([]byte, offSize)
		le.PutUint32(body[offPID:], b.PID)
		body[offReason] = byte(b.Reason)
		le.PutUint16(body[offDetailLen:], uint16(len(b.Detail)))
		le.PutUint32(body[offJava:], b.Java)
		body = append(body, b.Detail...)
	}
	out := make([]byte, HeaderSize, HeaderSize+len(body))
	le.PutUint32(out[offMagic:], Magic)
	le.PutUint16(out[offVersion:], ProtoVersion)
	le.PutUint16(out[offType:], uint16(f.Body.frameType()))
	le.PutUint32(out[offLength:], uint32(HeaderSize+len(body)))
	le.PutUint32(out[offSeq:], f.Seq)
	le.PutUint32(out[offTID:], f.TID)
	le.PutUint64(out[offTime:], f.TimeNs)
	return append(out, body...)
}
