import numpy as np, sonic

client = sonic.Client("grpc://127.0.0.1:8001")
result = client.infer("identity_fp32", {"INPUT0": np.arange(16, dtype=np.float32).reshape(1, 16)})
print(result["OUTPUT0"])
