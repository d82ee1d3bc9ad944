"""Triton's python_backend examples/custom_metrics/model.py, in its shape (add_sub that counts
the time its executes take in a COUNTER), with a GAUGE and a HISTOGRAM besides, and the checks of
the values read back through pb_utils that Triton's tests make (qa/python_models/custom_metrics).
The request's id picks what it checks besides: "" runs the example alone; "checks" the values;
"keep" and "drop" make and delete a metric; "flood" the limit of metrics a model may hold."""

import json
import time

import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    def initialize(self, args):
        self.model_config = model_config = json.loads(args["model_config"])
        output0_config = pb_utils.get_output_config_by_name(model_config, "OUTPUT0")
        output1_config = pb_utils.get_output_config_by_name(model_config, "OUTPUT1")
        self.out0_dtype = pb_utils.triton_string_to_numpy(output0_config["data_type"])
        self.out1_dtype = pb_utils.triton_string_to_numpy(output1_config["data_type"])
        self.metric_family = pb_utils.MetricFamily(
            name="requests_process_latency_ns",
            description="Cumulative time spent processing requests",
            kind=pb_utils.MetricFamily.COUNTER)
        self.metric = self.metric_family.Metric(labels={"model": "custom_metrics", "version": "1"})
        self.gauge = pb_utils.MetricFamily(name="custom_gauge", description="a gauge",
                                           kind=pb_utils.MetricFamily.GAUGE)
        self.histogram = pb_utils.MetricFamily(name="custom_histogram",
                                               description="a histogram",
                                               kind=pb_utils.MetricFamily.HISTOGRAM)
        self.kept = []  # a metric lasts while its object does, as in Triton

    def flood(self):
        """Makes metrics until the server refuses one (a model may hold 1024 at once), then
        lets them go, after which the server takes new ones again."""
        held = []
        try:
            for i in range(2000):
                held.append(self.gauge.Metric(labels={"flood": str(i)}))
            raise AssertionError("2000 metrics were taken")
        except pb_utils.TritonModelException as refused:
            assert "at most 1024 metrics" in str(refused), str(refused)
            assert 1000 < len(held) <= 1024, len(held)
        del held
        self.kept.append(self.gauge.Metric(labels={"flood": "after"}))
        self.kept[-1].set(1)

    def checks(self):
        """Raises unless the metrics behave as Triton's do."""
        gauge = self.gauge.Metric(labels={"instance": "checks", "quote": 'say "hi"\n'})
        self.kept.append(gauge)
        gauge.set(10)
        gauge.increment(-2.5)
        assert gauge.value() == 7.5, gauge.value()
        counter = self.metric_family.Metric(labels={"model": "custom_metrics", "version": "2"})
        self.kept.append(counter)
        counter.increment(5)
        try:
            counter.increment(-1)
            raise AssertionError("a counter took a negative increment")
        except pb_utils.TritonModelException:
            pass
        try:
            counter.set(1)
            raise AssertionError("a counter was set")
        except pb_utils.TritonModelException:
            pass
        assert counter.value() == 5
        histogram = self.histogram.Metric(labels={"instance": "checks"}, buckets=[1.0, 2.5, 10])
        self.kept.append(histogram)
        for value in (0.5, 2.0, 3.0, 100):
            histogram.observe(value)
        try:
            histogram.value()
            raise AssertionError("a histogram has a value")
        except pb_utils.TritonModelException:
            pass
        try:
            self.histogram.Metric(labels={"instance": "no buckets"})
            raise AssertionError("a histogram without buckets")
        except pb_utils.TritonModelException:
            pass
        try:
            self.gauge.Metric(labels={"a": "b"}, buckets=[1.0])
            raise AssertionError("a gauge with buckets")
        except pb_utils.TritonModelException:
            pass

    def execute(self, requests):
        responses = []
        start_ns = time.time_ns()
        for request in requests:
            if request.request_id() == "checks":
                self.checks()
            elif request.request_id() == "keep":
                self.temporary = self.gauge.Metric(labels={"instance": "temporary"})
                self.temporary.set(3)
            elif request.request_id() == "drop":
                # (Requests one after another reach the same instance: the first free one.)
                self.__dict__.pop("temporary", None)  # off the page with the next metric call
            elif request.request_id() == "flood":
                self.flood()
            in_0 = pb_utils.get_input_tensor_by_name(request, "INPUT0")
            in_1 = pb_utils.get_input_tensor_by_name(request, "INPUT1")
            out_0, out_1 = (in_0.as_numpy() + in_1.as_numpy(), in_0.as_numpy() - in_1.as_numpy())
            out_tensor_0 = pb_utils.Tensor("OUTPUT0", out_0.astype(self.out0_dtype))
            out_tensor_1 = pb_utils.Tensor("OUTPUT1", out_1.astype(self.out1_dtype))
            responses.append(pb_utils.InferenceResponse(output_tensors=[out_tensor_0,
                                                                        out_tensor_1]))
        end_ns = time.time_ns()
        self.metric.increment(max(end_ns - start_ns, 1))
        logger = pb_utils.Logger
        logger.log_info("Cumulative requests processing latency: {}".format(self.metric.value()))
        return responses

    def finalize(self):
        print("Cleaning up...")
